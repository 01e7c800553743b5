#!/bin/bash
# Multi-fidelity search of a real model through the real service: the
# built-in mlp (lr log [1e-4, 0.5], width 32..512 step 32, depth 1..3, dropout
# [0, 0.5]; SGD momentum 0.9, batch 128) on the first 12,000 Fashion-MNIST
# training images (1,200 held out for validation), epochs as the budget (1 to
# 9, rungs 1, 3, 9), submitted over REST to hpo-scheduler and run by one
# hpo-worker of S slots (max_concurrent S): random search at 9 epochs, ASHA
# (random), Hyperband (random) and BOHB (hyperband + tpe), promotions resumed from the
# rung below's checkpoint. Beside it, in the same run, Optuna's
# HyperbandPruner + TPESampler on the same mlp in PyTorch, and its random
# search without pruning (fidelity_torch_optuna.py, Debian's python3-optuna
# and python3-torch).
# From each sweep's finished trials (in the order they finished) it replays
# the epochs spent (a promotion spends only the epochs above its parent's)
# and the incumbent (the best validation accuracy at the largest budget
# finished so far), and prints the incumbent's accuracy on the 10,000 test
# images once half and all of the total budget are spent, median [min, max]
# over the seeds. Sweep seed s also draws its validation split and its
# trials' initialisation (data.seed and trial.seed s), as the PyTorch side
# draws a split and a generator per seed: each seed is an independent
# repetition on both sides. (Before 2026-12-04 21:00 every hpo sweep shared
# split 0 and seed 0.)
# The last column: per seed, the epochs a method spent before its incumbent
# was at least as accurate on the test images as ASHA's final incumbent of the
# same seed (same split), as a fraction of the total budget; median over the
# seeds that reached it, and how many did.
# Usage (from the repository root):
#   tests/bench/fidelity_torch_bench.sh [--build DIR] [--seeds 3] [--total 270] [--slots 2]
#       [--methods "random asha hyperband bohb optuna-hb optuna-random"]
#       (also bohb-gp: Hyperband with the bayesian sampler, its GP on the largest
#       budget with enough results; asha-tpe: ASHA with TPE)
#       [--keep FILE]   (also writes the raw trials to FILE and FILE.optuna)
#       [--replay FILE] (prints the table from a kept run; runs nothing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=3
total=270
slots=2
methods_wanted="random asha hyperband bohb optuna-hb optuna-random"
keep=""
replay=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --total) total=$2; shift 2 ;;
    --slots) slots=$2; shift 2 ;;
    --methods) methods_wanted=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --replay) replay=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=tests/bench/service.sh
source "$here/service.sh"
wanted() { [[ " $methods_wanted " == *" $1 "* ]]; }
out=$(mktemp)
trap '[[ -n ${SERVICE_HOME:-} ]] && service_stop; rm -f "$out" "$out".*' EXIT
# The table, from the hpo trials ($1) and the Optuna rows ($2).
print_table() {
  python3 - "$total" "$1" "$2" <<'PY'
import json, statistics, sys
total = float(sys.argv[1])
traj = {}  # (method, seed) -> [(spent, test accuracy of the incumbent)], and trials
count = {}
for line in open(sys.argv[2]):
    d = json.loads(line)
    by_id = {t["id"]: t for t in d["trials"]}
    done = sorted((t for t in d["trials"] if t["state"] == "completed"),
                  key=lambda t: t["finished_ms"])
    spent, inc_b, inc_val, points = 0.0, -1, -1.0, []
    for t in done:
        x = t.get("extra") or {}
        b = x.get("budget", 9)
        parent = by_id.get(x.get("resume_from", ""))
        spent += b - (parent["extra"]["budget"] if parent else 0)
        val = t["metrics"].get("val_accuracy", 0.0)
        if b > inc_b or (b == inc_b and val > inc_val):
            inc_b, inc_val = b, val
            points.append((spent, t["metrics"].get("test_accuracy", float("nan")), b, val))
        else:
            points.append((spent, points[-1][1], inc_b, inc_val))
    traj[(d["method"], d["seed"])] = points
    count[(d["method"], d["seed"])] = len(d["trials"])
for line in open(sys.argv[3]):
    f = line.rstrip("\n").split("\t")
    key = (f[1], int(f[2]))
    if f[0] == "traj":
        traj.setdefault(key, []).append((float(f[3]), float(f[4]), 9, None))
    elif f[0] == "end":
        count[key] = int(f[4])
TEST, VAL = 1, 3  # in a point: (spent, test accuracy, budget, validation accuracy)
def at(points, budget, k=TEST):  # the incumbent's accuracy once `budget` is spent (full-budget only)
    best = None
    for p in points:
        if p[0] <= budget + 1e-9 and p[2] == 9:
            best = p[k]
    return best
def cell(v):
    v = sorted(x for x in v if x is not None)
    return "%.4f [%.4f, %.4f]" % (statistics.median(v), v[0], v[-1]) if v else "-"
methods = []
for m, _ in traj:
    if m not in methods:
        methods.append(m)
def reached(points, target, k):  # the epochs spent once the incumbent's accuracy is >= target
    for p in points:
        if p[2] == 9 and p[0] <= total + 1e-9 and p[k] is not None and p[k] >= target:
            return p[0]
    return None
def to_asha(m, seeds, k=TEST):
    fractions = []
    for s in seeds:
        if ("asha", s) not in traj or at(traj[("asha", s)], total, k) is None:
            continue
        if not any(p[k] is not None for p in traj[(m, s)]):
            continue  # no validation accuracy on this side (another split)
        spent = reached(traj[(m, s)], at(traj[("asha", s)], total, k), k)
        fractions.append(None if spent is None else spent / total)
    hit = sorted(f for f in fractions if f is not None)
    if not fractions:
        return "-"
    head = "%.2f" % statistics.median(hit) if hit else "not reached"
    return "%s (%d/%d)" % (head, len(hit), len(fractions))
print("| method | test accuracy at 1/2 of %g epochs | at %g epochs | trials | "
      "budget to ASHA's final (test) | validation accuracy at 1/2 | at %g | "
      "budget to ASHA's final (validation) |" % (total, total, total))
print("|---|---|---|---|---|---|---|---|")
for m in methods:
    seeds = [s for (mm, s) in traj if mm == m]
    print("| %s | %s | %s | %g | %s | %s | %s | %s |" % (
        m, cell([at(traj[(m, s)], total / 2) for s in seeds]),
        cell([at(traj[(m, s)], total) for s in seeds]),
        statistics.median(count.get((m, s), 0) for s in seeds), to_asha(m, seeds),
        cell([at(traj[(m, s)], total / 2, VAL) for s in seeds]),
        cell([at(traj[(m, s)], total, VAL) for s in seeds]), to_asha(m, seeds, VAL)))
print("(the incumbent: the best validation accuracy among the 9-epoch trials finished by then;"
      " its accuracy on the 10,000 test images; median [min, max] over the seeds; the last"
      " columns \"budget to ASHA's final\": per seed, the epochs spent before the incumbent was"
      " at least as accurate as ASHA's final one of the same seed, over the total, median of the"
      " seeds that got there; validation accuracies only for hpo, whose methods share a seed's"
      " split)")
PY
}
if [[ -n $replay ]]; then
  print_table "$replay" "$replay.optuna"
  exit 0
fi
service_banner
# Optuna first, on its own (one thread), then hpo: the figures are accuracies
# at equal budget, but each side's wall clock is printed too.
t0=$SECONDS
: > "$out.optuna"
if wanted optuna-hb; then
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/fidelity_torch_optuna.py" --seeds "$seeds" \
    --total "$total" >> "$out.optuna"
  echo "# optuna-hb: $((SECONDS - t0)) s for $seeds seeds"
fi
# Optuna's random search without pruning: beside hpo's, what differs is the
# training code and the validation split, not the search.
if wanted optuna-random; then
  t0=$SECONDS
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$here/fidelity_torch_optuna.py" --seeds "$seeds" \
    --total "$total" --random >> "$out.optuna"
  echo "# optuna-random: $((SECONDS - t0)) s for $seeds seeds"
fi
service_start "$build" 1 "$slots"

spec() {  # NAME ALGORITHM TYPE(none|asha|hyperband) MAX_TRIALS SEED
  jq -nc --arg name "$1" --arg a "$2" --arg t "$3" --argjson n "$4" --argjson s "$5" \
    --argjson c "$slots" "{
      name: \"fidelity-torch-bench \(\$name) \(\$s)\",
      objective: {metric: \"val_accuracy\", mode: \"max\"},
      parameters: {lr: {type: \"float\", min: 0.0001, max: 0.5, log: true},
                   width: {type: \"int\", min: 32, max: 512, step: 32},
                   depth: {type: \"int\", min: 1, max: 3},
                   dropout: {type: \"float\", min: 0, max: 0.5}},
      search: ({algorithm: \$a, max_trials: \$n, max_concurrent: \$c, seed: \$s} +
               (if \$t == \"none\" then {} else
                {multi_fidelity: {type: \$t, resource: \"epochs\", min: 1, max: 9}} end)),
      trial: {kind: \"torch\", task: \"classification\",
              model: {type: \"mlp\", hidden: \"{width}\", depth: \"{depth}\", dropout: \"{dropout}\"},
              data: ($SERVICE_FASHION_MNIST + {seed: \$s}),
              optimizer: {type: \"sgd\", lr: \"{lr}\", momentum: 0.9}, seed: \$s,
              batch_size: 128, epochs: 9, timeout_s: 600, max_attempts: 2}}"
}

# name algorithm type max_trials (enough trials to spend the total budget)
methods=("random random none $((total / 9 + 1))" "asha random asha $((total / 2))"
         "hyperband random hyperband $((total * 2 / 5))" "bohb tpe hyperband $((total * 2 / 5))"
         "bohb-gp bayesian hyperband $((total * 2 / 5))" "asha-tpe tpe asha $((total / 2))")
for m in "${methods[@]}"; do
  read -r name algo type n <<<"$m"
  wanted "$name" || continue
  t0=$SECONDS
  for s in $(seq "$seeds"); do
    service_submit "$(spec "$name" "$algo" "$type" "$n" "$s")"
    service_finished_trials "$name" "$s" >> "$out"
  done
  echo "# $name: $((SECONDS - t0)) s for $seeds seeds"
done
if [[ -n $keep ]]; then cp "$out" "$keep" && cp "$out.optuna" "$keep.optuna"; fi
print_table "$out" "$out.optuna"
