#!/bin/bash
# Population-based training of a real model through the real service: the
# built-in mlp (784-256-256-10, SGD with momentum 0.9, batch 128) on the first
# 12,000 Fashion-MNIST training images (1,200 held out for validation), whose
# learning rate (log [1e-4, 0.3]) is better decayed than fixed. PBT
# (population P, intervals of 1 epoch up to E: every interval a trial that
# goes on from a checkpoint, the bottom quarter exploiting the top quarter
# and exploring lr) against random search over a fixed lr with the same total
# budget (P trainings of E epochs), each submitted over REST to hpo-scheduler
# and run by one hpo-worker of S slots. Prints, per method, the accuracy on
# the 10,000 test images of the final model with the best validation
# accuracy, median [min, max] over the seeds, and PBT's exploits.
# Usage (from the repository root):
#   tests/bench/pbt_torch_bench.sh [--build DIR] [--seeds 5] [--population 8] [--epochs 8] [--slots 2]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=5
population=8
epochs=8
slots=2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --population) population=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=tests/bench/service.sh
source "$here/service.sh"
service_banner
out=$(mktemp)
trap '[[ -n ${SERVICE_HOME:-} ]] && service_stop; rm -f "$out"' EXIT
service_start "$build" 1 "$slots"

spec() {  # METHOD(pbt|random) SEED
  jq -nc --arg m "$1" --argjson s "$2" --argjson p "$population" --argjson e "$epochs" \
    --argjson c "$slots" "{
      name: \"pbt-torch-bench \(\$m) \(\$s)\",
      objective: {metric: \"val_accuracy\", mode: \"max\"},
      parameters: {lr: {type: \"float\", min: 0.0001, max: 0.3, log: true}},
      search: ({algorithm: \"random\", max_concurrent: \$c, seed: \$s} +
               (if \$m == \"pbt\" then {max_trials: (\$p * \$e + \$p),
                  pbt: {population: \$p, resource: \"epochs\", interval: 1, max: \$e}}
                else {max_trials: \$p} end)),
      trial: {kind: \"torch\", task: \"classification\",
              model: {type: \"mlp\", hidden: 256, depth: 2}, data: $SERVICE_FASHION_MNIST,
              optimizer: {type: \"sgd\", lr: \"{lr}\", momentum: 0.9},
              batch_size: 128, epochs: \$e, timeout_s: 600, max_attempts: 2}}"
}

for m in random pbt; do
  t0=$SECONDS
  for s in $(seq "$seeds"); do
    service_submit "$(spec "$m" "$s")"
    service_finished_trials "$m" "$s" >> "$out"
  done
  echo "# $m: $((SECONDS - t0)) s for $seeds seeds"
done
python3 - "$epochs" "$out" <<'PY'
import json, statistics, sys
epochs = int(sys.argv[1])
rows = {}
for line in open(sys.argv[2]):
    d = json.loads(line)
    done = [t for t in d["trials"] if t["state"] == "completed"]
    # Final models: a random trial, or a PBT member's last interval.
    final = [t for t in done if (t.get("extra") or {}).get("budget", epochs) == epochs]
    best = max(final, key=lambda t: t["metrics"]["val_accuracy"])
    spent = sum(1 if t.get("extra") else epochs for t in done)
    exploits = sum(1 for t in done if (t.get("extra") or {}).get("exploited"))
    rows.setdefault(d["method"], []).append(
        (best["metrics"]["test_accuracy"], best["metrics"]["val_accuracy"], spent, exploits,
         best["params"]["lr"]))
print("| method | test accuracy of the best final model | its validation accuracy | epochs spent | exploits | its last lr |")
print("|---|---|---|---|---|---|")
def cell(v):
    v = sorted(v)
    return "%.4f [%.4f, %.4f]" % (statistics.median(v), v[0], v[-1])
for m, r in rows.items():
    print("| %s | %s | %s | %g | %g | %.3g |" % (
        m, cell([a for a, *_ in r]), cell([b for _, b, *_ in r]),
        statistics.median(x[2] for x in r), statistics.median(x[3] for x in r),
        statistics.median(x[4] for x in r)))
PY
