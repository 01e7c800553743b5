#!/bin/bash
# Runs the C++ search benchmark and the Optuna reference side by side and
# prints one table. Usage (from the repository root):
#   tests/bench/search_bench.sh [--build DIR] [--seeds N] [--budgets 30,60,100]
#                               [--functions branin,hartmann6,...] [--no-timing] [--no-quality]
# DIR defaults to $BUILD_DIR or ./build; the target is built with
#   cmake --build DIR --target search_bench
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds|--budgets|--functions|--timing-n) args+=("$1" "$2"); shift 2 ;;
    --no-timing|--no-quality) args+=("$1"); shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/tests/bench/search_bench
[ -x "$bin" ] || { echo "build it first: cmake --build $build --target search_bench" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "# search_bench ${args[*]:-}" >&2
"$bin" "${args[@]}" >> "$out"
/usr/bin/python3 "$here/search_optuna.py" "${args[@]}" >> "$out"
/usr/bin/python3 "$here/search_table.py" < "$out"
