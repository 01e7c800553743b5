#!/bin/bash
# Warm start on a family of related tasks (shifted, scaled Branin and
# Hartmann6; see warm_start() in search_bench.cpp), hpo's TPE and Bayesian
# samplers side by side with Optuna's TPE warm-started by add_trials(), in one
# run. Usage (from the repository root):
#   tests/bench/warm_start_bench.sh [--build DIR] [--seeds 10] [--functions branin,hartmann6]
#                                   [--opposite]
# --opposite: the earlier sweep's values negated on both sides (an earlier
# sweep that ranks this task's points the other way: what a warm start costs
# when it is wrong).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
args=(--seeds 10 --functions branin,hartmann6)
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds|--functions) args+=("$1" "$2"); shift 2 ;;
    --opposite) args+=("$1"); shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/tests/bench/search_bench
[ -x "$bin" ] || { echo "build it first: cmake --build $build --target search_bench" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --warm-start --samplers tpe,bayesian "${args[@]}" > "$out"
/usr/bin/python3 "$here/search_warm_optuna.py" < "$out" >> "$out"
printf '%-10s %-11s %22s %16s %18s %18s\n' function sampler "evals to cold's best@100" "within 30" \
  "warm regret@30" "cold regret@30"
grep '^warm' "$out" | sort -k2,2 -k3,3 | while IFS=$'\t' read -r _ fn s med within n w c; do
  printf '%-10s %-11s %22s %16s %18s %18s\n' "$fn" "$s" "$med (median)" "$within/$n" "$w" "$c"
done
