#!/bin/bash
# Multi-fidelity search: random search at the full budget, ASHA, Hyperband and
# BOHB in hpo (fidelity_bench: the scheduler's schedule and samplers, 4
# simulated workers) against Optuna's HyperbandPruner with TPESampler
# (fidelity_optuna.py) on the same learning-curve function, in the same run.
# Budget: steps of the curve; a promotion spends only the steps above its parent's.
# Usage (from the repository root):
#   tests/bench/fidelity_bench.sh [--build DIR] [--seeds 10] [--total 2700] [--workers 4]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds|--total|--workers|--noise) args+=("$1" "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/tests/bench/fidelity_bench
[ -x "$bin" ] || { echo "build it first: cmake --build $build --target fidelity_bench" >&2; exit 2; }
/usr/bin/python3 -c 'import optuna' 2>/dev/null ||
  { echo "needs Debian's python3-optuna: scripts/install-deps.sh --bench" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out" "$out".*' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, optuna $(/usr/bin/python3 -c 'import optuna; print(optuna.__version__)')"
"$bin" "${args[@]}" > "$out.hpo" &
hpo=$!
opt_args=()
for ((i = 0; i < ${#args[@]}; i += 2)); do
  [ "${args[i]}" = --workers ] || opt_args+=("${args[i]}" "${args[i+1]}")
done
/usr/bin/python3 "$here/fidelity_optuna.py" "${opt_args[@]}" > "$out.optuna"
wait "$hpo"
cat "$out.hpo" "$out.optuna" | /usr/bin/python3 "$here/fidelity_table.py"
