#!/usr/bin/env bash
# What packing trials onto shared GPUs costs the service (issue 44): the real
# hpo-scheduler (embedded Redis) and one hpo-worker of S slots run a sweep of
# N `synthetic` `noop` trials, S at a time, three ways in turn:
#   cpu     no GPUs, trials asking none (the reference);
#   whole   S GPUs (--fake-gpus), trials of gpus 1: one device each;
#   packed  one GPU on the stand-in NVML (tests/support/fake_nvml.cpp), trials of
#           gpus 1/S: S share it (the claim picks a device and books a share;
#           the worker samples each trial's GPU use every second).
# Prints trials/s of each (the sweep's own clock, Redis time) and the ratios
# to cpu. The trials do no GPU work: this is the placement's cost, not
# a GPU's throughput (tests/bench/gpu_check.sh measures that on a GPU host).
#
#   tests/bench/packing_bench.sh [build] [trials] [slots]   defaults: build 20000 16
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
trials=${2:-20000}
slots=${3:-16}
source tests/bench/service.sh
nvml_dir=$PWD/$build/tests/fake_nvml
[[ -e $nvml_dir/libnvidia-ml.so.1 ]] ||
  { echo "packing_bench: no $nvml_dir/libnvidia-ml.so.1 (build with tests: scripts/build.sh --tests)" >&2; exit 2; }

service_banner
echo "packing_bench $(git rev-parse --short HEAD): $trials noop trials, 1 worker x $slots slots, $slots at once"

# run NAME RESOURCES_JSON: one service, one sweep; prints and sets TPS.
run() {
  service_start "$build" 1 "$slots"
  trap service_stop EXIT
  service_wait_workers 1
  service_submit "$(jq -nc --argjson n "$trials" --argjson c "$slots" --argjson r "$2" '{
    name: "packing", objective: {metric: "value", mode: "min"},
    parameters: {x1: {type: "float", min: -5, max: 10}, x2: {type: "float", min: 0, max: 15}},
    search: {algorithm: "random", max_trials: $n, max_concurrent: $c, seed: 1},
    trial: {kind: "synthetic", function: "noop", sleep_s: 0, resources: $r}}')"
  service_wait 0.2
  TPS=$(service_trials_per_s "$trials")
  printf '  %-7s %8s trials/s\n' "$1" "$TPS"
  service_stop
  trap - EXIT
}

SERVICE_WORKER_ARGS="" run cpu '{}'
cpu=$TPS
fake=$(printf 'H100:80,%.0s' $(seq "$slots"))
SERVICE_WORKER_ARGS="--fake-gpus ${fake%,}" run whole '{"gpus": 1}'
whole=$TPS
nvml=$(mktemp /tmp/hpo-nvml.XXXXXX)
echo "gpu GPU-00000000-bench 81559 0 0 NVIDIA H100 80GB HBM3" >"$nvml"
share=$(python3 -c "print(round(1 / $slots, 3))")
export LD_LIBRARY_PATH=$nvml_dir HPO_FAKE_NVML_FILE=$nvml
SERVICE_WORKER_ARGS="" run packed "{\"gpus\": $share}"
packed=$TPS
unset LD_LIBRARY_PATH HPO_FAKE_NVML_FILE
rm -f "$nvml"
python3 -c "print(f'whole / cpu {$whole / $cpu:.2f}x, packed / cpu {$packed / $cpu:.2f}x, packed / whole {$packed / $whole:.2f}x')"
