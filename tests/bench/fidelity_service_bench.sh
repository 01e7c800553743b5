#!/bin/bash
# Multi-fidelity search through the real service: sweeps over fidelity_bench's
# learning-curve function (synthetic hartmann6, curve crossing, noise 0.05,
# resource steps up to 27) submitted over REST to hpo-scheduler and run by one
# hpo-worker of S slots, max_concurrent S: random search at the full budget,
# ASHA (random), Hyperband + TPE (BOHB) and ASHA + TPE, each with promotions
# resumed from the rung below's checkpoint. From the finished trials (in the
# order they finished) it replays the budget spent (a promotion spends only
# the steps above its parent's) and the incumbent (the best trial at the
# largest budget finished so far), and prints the incumbent's noise-free
# full-budget value once half and all of the total budget are spent, median
# [min, max] over the seeds, beside tests/bench/fidelity_bench.sh (simulated pool).
# Usage (from the repository root):
#   tests/bench/fidelity_service_bench.sh [--build DIR] [--seeds 5] [--total 2700] [--slots 4]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=5
total=2700
slots=4
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --total) total=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=tests/bench/service.sh
source "$here/service.sh"
service_banner
service_start "$build" 1 "$slots"
trap service_stop EXIT
out=$(mktemp)

spec() {  # NAME ALGORITHM TYPE(none|asha|hyperband) MAX_TRIALS SEED
  jq -nc --arg name "$1" --arg a "$2" --arg t "$3" --argjson n "$4" --argjson s "$5" \
    --argjson c "$slots" '{
      name: "fidelity-bench \($name) \($s)",
      objective: {metric: "value", mode: "min"},
      parameters: ([range(1; 7) | {key: "x\(.)", value: {type: "float", min: 0, max: 1}}]
                   | from_entries),
      search: ({algorithm: $a, max_trials: $n, max_concurrent: $c, seed: $s} +
               (if $t == "none" then {} else
                {multi_fidelity: {type: $t, resource: "steps", min: 1, max: 27}} end)),
      trial: ({kind: "synthetic", function: "hartmann6", curve: "crossing", noise: 0.05}
              + (if $t == "none" then {steps: 27} else {} end))}'
}

# name algorithm type max_trials (enough trials to spend the total budget)
methods=("random random none $((total / 27 + 1))" "asha random asha $((total / 2))"
         "bohb tpe hyperband $((total / 4))" "asha-tpe tpe asha $((total / 3))")
for m in "${methods[@]}"; do
  read -r name algo type n <<<"$m"
  for s in $(seq "$seeds"); do
    service_submit "$(spec "$name" "$algo" "$type" "$n" "$s")"
    service_finished_trials "$name" "$s" 0.5 >> "$out"
  done
done
python3 - "$total" "$out" <<'PY'
import json, math, statistics, sys
total = float(sys.argv[1])
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8],
     [17, 8, 0.05, 10, 0.1, 14]]
P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
ALPHA = [1.0, 1.2, 3.0, 3.2]
def full(p):
    x = [p["x%d" % i] for i in range(1, 7)]
    f = -sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j] * 1e-4) ** 2 for j in range(6)))
             for i in range(4))
    return f + math.exp(-(0.5 + 4.5 * x[0]))
rows = {}
for line in open(sys.argv[2]):
    d = json.loads(line)
    by_id = {t["id"]: t for t in d["trials"]}
    done = sorted((t for t in d["trials"] if t["state"] == "completed"), key=lambda t: t["finished_ms"])
    spent, inc_b, inc_seen, inc = 0.0, -1, 1e300, None
    at = {}
    for t in done:
        x = t.get("extra") or {}
        b = x.get("budget", 27)
        parent = by_id.get(x.get("resume_from", ""))
        spent += b - (parent["extra"]["budget"] if parent else 0)
        if b > inc_b or (b == inc_b and t["value"] < inc_seen):
            inc_b, inc_seen, inc = b, t["value"], full(t["params"])
        for frac in (0.5, 1.0):
            if spent <= frac * total + 1e-9:
                at[frac] = inc
    rows.setdefault(d["method"], []).append((at.get(0.5), at.get(1.0), spent, len(d["trials"])))
def cell(v):
    v = sorted(x for x in v if x is not None)
    return "%.4f [%.4f, %.4f]" % (statistics.median(v), v[0], v[-1]) if v else "-"
print("| method | value at 1/2 budget | at the full budget (%g) | budget spent | trials |" % total)
print("|---|---|---|---|---|")
for m, r in rows.items():
    print("| %s | %s | %s | %g | %g |" % (m, cell([a for a, _, _, _ in r]), cell([b for _, b, _, _ in r]),
                                         statistics.median(s for _, _, s, _ in r),
                                         statistics.median(n for _, _, _, n in r)))
PY
rm -f "$out"
