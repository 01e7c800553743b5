#!/bin/bash
# One fixed mlp configuration on Fashion-MNIST, trained by hpo (through the
# service: scheduler, worker, slots) and by PyTorch (Debian's python3-torch,
# mlp_parity_torch.py) over the same seeds: the same data (the first 12,000
# training images, a tenth held out, a split drawn per seed on each side),
# model, optimiser and epochs. What is left between the two columns is the
# training code; the seed-to-seed spread says how much of it is noise.
# hpo runs one grid sweep over the seed (trial.seed and data.seed both "{s}").
# Usage (from the repository root, after building):
#   tests/bench/mlp_parity_bench.sh [--build DIR] [--seeds 5] [--lr 0.05] [--width 256]
#                                   [--depth 2] [--dropout 0.2] [--epochs 9] [--slots 2]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=5 lr=0.05 width=256 depth=2 dropout=0.2 epochs=9 slots=2
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --dropout) dropout=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=tests/bench/service.sh
source "$here/service.sh"
service_banner
echo "# lr $lr, hidden $width x $depth, dropout $dropout, SGD momentum 0.9, batch 128, $epochs epochs"
out=$(mktemp)
trap '[[ -n ${SERVICE_HOME:-} ]] && service_stop; rm -f "$out" "$out".*' EXIT
t0=$SECONDS
OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/mlp_parity_torch.py" --seeds "$seeds" --lr "$lr" \
  --width "$width" --depth "$depth" --dropout "$dropout" --epochs "$epochs" > "$out.torch"
echo "# pytorch: $((SECONDS - t0)) s"
t0=$SECONDS
service_start "$build" 1 "$slots"
service_submit "$(jq -nc --argjson n "$seeds" --argjson c "$slots" --argjson lr "$lr" \
  --argjson w "$width" --argjson d "$depth" --argjson p "$dropout" --argjson e "$epochs" "{
    name: \"mlp parity\", objective: {metric: \"val_accuracy\", mode: \"max\"},
    parameters: {s: {type: \"int\", min: 1, max: \$n}},
    search: {algorithm: \"grid\", max_trials: \$n, max_concurrent: \$c},
    trial: {kind: \"torch\", task: \"classification\", seed: \"{s}\",
            model: {type: \"mlp\", hidden: \$w, depth: \$d, dropout: \$p},
            data: ($SERVICE_FASHION_MNIST + {seed: \"{s}\"}),
            optimizer: {type: \"sgd\", lr: \$lr, momentum: 0.9},
            batch_size: 128, epochs: \$e, timeout_s: 900, max_attempts: 1}}")"
service_finished_trials hpo 0 > "$out"
echo "# hpo: $((SECONDS - t0)) s"
python3 - "$out" "$out.torch" <<'PY'
import json, statistics, sys
trials = json.loads(open(sys.argv[1]).read())["trials"]
hpo = {int(t["params"]["s"]): (t["metrics"].get("val_accuracy"), t["metrics"].get("test_accuracy"))
       for t in trials if t["state"] == "completed"}
torch = {}
for line in open(sys.argv[2]):
    f = line.split()
    torch[int(f[1])] = (float(f[2]), float(f[3]))
print("| seed | hpo validation | hpo test | PyTorch validation | PyTorch test |")
print("|---|---|---|---|---|")
for s in sorted(set(hpo) | set(torch)):
    h, t = hpo.get(s, (None, None)), torch.get(s, (None, None))
    fmt = lambda v: "-" if v is None else "%.4f" % v
    print("| %d | %s | %s | %s | %s |" % (s, fmt(h[0]), fmt(h[1]), fmt(t[0]), fmt(t[1])))
def summary(d, i):
    v = [x[i] for x in d.values() if x[i] is not None]
    return "%.4f ± %.4f" % (statistics.mean(v), statistics.stdev(v) / len(v) ** 0.5) if len(v) > 1 else "-"
print("| mean ± s.e. | %s | %s | %s | %s |" % (summary(hpo, 0), summary(hpo, 1),
                                              summary(torch, 0), summary(torch, 1)))
PY
