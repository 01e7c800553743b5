#!/bin/bash
# Multi-objective search through the real service: sweeps of the synthetic
# ZDT1, ZDT2, ZDT3 (6 inputs, 2 objectives) and DTLZ2 (7 inputs, 3) submitted over
# REST to hpo-scheduler (embedded Redis) and run by one hpo-worker of S slots,
# max_concurrent S (so the samplers ask with trials in flight); each
# objective's reference 1.1 declared. Prints the hypervolume GET
# /api/sweeps/{id}/pareto reports after the sweep, median [min, max] over the
# seeds, for bayesian (GP + EHVI) and nsga2 (and random), beside what
# tests/bench/pareto_bench.sh measures in isolation (one trial at a time).
# Usage (from the repository root):
#   tests/bench/pareto_service_bench.sh [--build DIR] [--seeds 3] [--trials 100] [--slots 4]
#                                       [--functions zdt1,zdt2,zdt3,dtlz2]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=3
trials=100
slots=4
algorithms=bayesian,nsga2,random
functions=zdt1,zdt2,zdt3,dtlz2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --algorithms) algorithms=$2; shift 2 ;;
    --functions) functions=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=tests/bench/service.sh
source "$here/service.sh"
service_banner
service_start "$build" 1 "$slots"
trap service_stop EXIT

submit() {  # FUNCTION DIMS OBJECTIVES ALGORITHM SEED -> sweep id
  local spec
  spec=$(jq -nc --arg f "$1" --argjson d "$2" --argjson m "$3" --arg a "$4" --argjson s "$5" \
    --argjson n "$trials" --argjson c "$slots" '{
      name: "pareto-bench \($f) \($a) \($s)",
      objectives: [range(1; $m + 1) | {metric: "f\(.)", mode: "min", reference: 1.1}],
      parameters: ([range(1; $d + 1) | {key: "x\(.)", value: {type: "float", min: 0, max: 1}}]
                   | from_entries),
      search: {algorithm: $a, max_trials: $n, max_concurrent: $c, seed: $s},
      trial: {kind: "synthetic", function: $f, sleep_s: 0}}')
  curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" -H 'Content-Type: application/json' \
    -d "$spec" "$SERVICE_API/api/sweeps" | jq -r .id
}

printf '%-6s %7s %-9s %24s %10s\n' function trials algorithm "hypervolume [min, max]" "wall s"
IFS=, read -r -a algos <<<"$algorithms"
IFS=, read -r -a fns <<<"$functions"
for f in "${fns[@]}"; do
  case "$f" in  # inputs and objectives, as search::multi_objective_info has them
    zdt1 | zdt2 | zdt3) d=6 m=2 ;;
    dtlz2) d=7 m=3 ;;
    *) echo "unknown function $f" >&2; exit 2 ;;
  esac
  for a in "${algos[@]}"; do
    hv=()
    t0=$SECONDS
    for s in $(seq "$seeds"); do
      SERVICE_SWEEP=$(submit "$f" "$d" "$m" "$a" "$s")
      service_wait 0.2
      state=$(jq -r .state <<<"$SERVICE_DOC")
      [[ $state == finished ]] || { echo "$f $a seed $s: sweep $state" >&2; exit 1; }
      hv+=("$(curl -sf "$SERVICE_API/api/sweeps/$SERVICE_SWEEP/pareto" | jq .hypervolume)")
    done
    python3 - "$f" "$trials" "$a" "$((SECONDS - t0))" "${hv[@]}" <<'PY'
import statistics, sys
f, n, a, wall, *hv = sys.argv[1:]
v = sorted(float(x) for x in hv)
print(f"{f:<6} {n:>7} {a:<9} {statistics.median(v):>9.4f} [{v[0]:.4f}, {v[-1]:.4f}] {wall:>10}")
PY
  done
done
echo "(hypervolume at reference 1.1 per objective, median over $seeds seeds, $slots trials at once)"
