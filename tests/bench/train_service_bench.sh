#!/usr/bin/env bash
# Training speed where users get it (issue 14): `torch` trials submitted to
# the real hpo-scheduler and run by an hpo-worker, their own reported
# train_samples_per_s, beside PyTorch for Python (Debian python3-torch,
# OPENBLAS_NUM_THREADS=1) training the same model on the same rows right
# after, in the same run:
#   1 slot  (a trial gets both threads)  vs one Python process, 2 threads;
#   2 slots (1 thread each, two trials at once: the aggregate) vs two Python
#           processes of 1 thread at once (their aggregate).
# Each configuration runs two waves of trials (a slot's first and next).
# Also each trial's time from its claim (started_ms) to its first training
# step (the `first_step_ms` metric; round 1's trials decode the dataset, the
# later rounds' read the worker's dataset cache), and its wall time.
#
#   tests/bench/train_service_bench.sh [build] [model: mlp|cnn] [epochs] [rows] [rounds]
#   defaults: build mlp 2 60000 3 (54,000 train rows after the 10 % validation split)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
model=${2:-mlp}
epochs=${3:-2}
rows=${4:-60000}
rounds=${5:-3}
source tests/bench/service.sh
export OPENBLAS_NUM_THREADS=1
data=/usr/share/datasets/fashion-mnist
echo "train_service_bench $(date -u '+%F %H:%M') UTC on $(nproc) cores, $(git rev-parse --short HEAD):" \
  "$model, $epochs epochs, $rows rows (90 % train), batch 128, SGD; load $(cut -d' ' -f1-3 /proc/loadavg)"

# sweep_of N C: N torch trials of a grid over seeds 0..N (a range needs two
# ends), max_concurrent C.
sweep_of() {
  local m
  if [[ $model == mlp ]]; then m='{type: "mlp", layers: [256, 128]}'
  else m='{type: "cnn", channels: [32, 64], padding: "valid", pool: "last", dense: [128]}'; fi
  jq -nc --argjson n "$1" --argjson c "$2" --argjson e "$epochs" --argjson rows "$rows" --arg d "$data" "{
    name: \"train-bench\", objective: {metric: \"val_accuracy\", mode: \"max\"},
    parameters: {seed: {type: \"int\", min: 0, max: \$n}},
    search: {algorithm: \"grid\", max_trials: \$n, max_concurrent: \$c},
    trial: {kind: \"torch\", model: $m,
      data: {format: \"idx\", train_images: (\$d + \"/train-images-idx3-ubyte.gz\"),
             train_labels: (\$d + \"/train-labels-idx1-ubyte.gz\"), subset: \$rows},
      optimizer: {type: \"sgd\", lr: 0.01, momentum: 0.9}, batch_size: 128, epochs: \$e,
      seed: \"{seed}\", timeout_s: 3000}}"
}

# run_service SLOTS: one worker of SLOTS slots runs 2 x SLOTS trials, SLOTS at
# once; prints "aggregate samples/s (SLOTS x the median trial's),
# claim->first step ms (median of the second wave: a slot's next trial, as
# most trials of a sweep are), wall s (median)". The first wave's trials are
# claimed while the worker is still starting up (its processes for the
# trials, the data when the cache is cold).
run_service() {
  local slots=$1
  service_start "$build" 1 "$slots"
  trap service_stop EXIT
  service_wait_workers 1
  SERVICE_SWEEP=$(curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" -H 'Content-Type: application/json' \
    -d "$(sweep_of "$((2 * slots))" "$slots")" "$SERVICE_API/api/sweeps" | jq -r .id)
  service_wait 1
  local page
  page=$(curl -sf "$SERVICE_API/api/sweeps/$SERVICE_SWEEP/trials?limit=100")
  if [[ $(jq '[.trials[] | select(.state == "completed")] | length' <<<"$page") != "$((2 * slots))" ]]; then
    jq -c '.trials[] | {state, error}' <<<"$page" >&2
    return 1
  fi
  jq -r --argjson s "$slots" 'def median: sort | if length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    [([.trials[].metrics.train_samples_per_s] | median * $s),
     ([.trials[] | select(.number >= $s) | .metrics.first_step_ms] | median),
     ([.trials[] | (.finished_ms - .started_ms) / 1000] | median)] | @tsv' <<<"$page" | tr '\n' '\t'
  # The OpenBLAS kernels the worker gave its trials' processes (blas_core.hpp), "-" if none.
  local core
  core=$(sed -n 's/.* OPENBLAS_CORETYPE=\([A-Za-z0-9]*\).*/\1/p' "$SERVICE_HOME"/worker-*.log | head -1)
  echo "${core:--}"
  service_stop
  trap - EXIT
}

# run_python PROCS THREADS [CORE]: aggregate samples/s of PROCS processes at
# once; CORE (not "-"): with OPENBLAS_CORETYPE=CORE, the kernels the worker
# gave its trials.
run_python() {
  local procs=$1 threads=$2 core=${3:--} out
  local -a env=()
  [[ $core == - ]] || env=(OPENBLAS_CORETYPE="$core")
  out=$(for _ in $(seq "$procs"); do
    env "${env[@]}" /usr/bin/python3 tests/bench/train_service_ref.py "$model" "$threads" "$epochs" &
  done; wait)
  awk '/^RESULT/ {s += $3} END {printf "%.1f\n", s}' <<<"$out"
}

# Rounds alternate hpo and Python so that a change of load on a shared
# machine hits both; the table shows each round, then the medians.
rows_out=$(mktemp)
# One dataset cache for the whole run, as on a host that keeps its workers'
# cache: round 1's first trials decode the data, the later ones read it back.
HPO_DATASET_CACHE=$(mktemp -d /tmp/hpo-bench-datasets.XXXXXX)
export HPO_DATASET_CACHE
trap 'rm -rf "$rows_out" "$HPO_DATASET_CACHE"' EXIT
for round in $(seq "$rounds"); do
  for slots in 1 2; do
    read -r hpo first wall core < <(run_service "$slots")
    threads=$((2 / slots))
    py=$(run_python "$slots" "$threads")
    # Python again with the worker's kernels: what the trainer gains on the same BLAS.
    if [[ $core == - ]]; then py_same=$py; else py_same=$(run_python "$slots" "$threads" "$core"); fi
    echo "$round $slots $threads $hpo $py $first $wall $py_same $core" | tee -a "$rows_out" >&2
  done
done
python3 - "$rows_out" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
# Columns: round slots threads hpo python first_step wall python_same_kernels kernels
print(f"OpenBLAS kernels the worker gave its trials: {rows[0][8]} (python: as Debian's loads them; "
      f"python same: with OPENBLAS_CORETYPE={rows[0][8]})")
print(f"{'configuration':<26} {'hpo s/s':>8} {'python':>8} {'ratio':>6} {'py same':>8} {'ratio':>6}"
      f" {'claim->1st step':>16} {'trial wall':>11}")
def line(label, hpo, py, same, r1, r2, first, wall):
    print(f"{label:<26} {hpo:8.0f} {py:8.0f} {r1:5.2f}x {same:8.0f} {r2:5.2f}x {first:13.0f} ms {wall:9.1f} s")
for slots in ("1", "2"):
    rs = [r for r in rows if r[1] == slots]
    for r in rs:
        hpo, py, same = float(r[3]), float(r[4]), float(r[7])
        line(f"round {r[0]}: {r[1]} slot(s) x {r[2]} thr", hpo, py, same, hpo / py, hpo / same,
             float(r[5]), float(r[6]))
    med = lambda f: statistics.median(f(r) for r in rs)
    line(f"median  {slots} slot(s) x {rs[0][2]} thr", med(lambda r: float(r[3])),
         med(lambda r: float(r[4])), med(lambda r: float(r[7])),
         med(lambda r: float(r[3]) / float(r[4])), med(lambda r: float(r[3]) / float(r[7])),
         med(lambda r: float(r[5])), med(lambda r: float(r[6])))
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
