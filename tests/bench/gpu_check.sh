#!/usr/bin/env bash
# The GPU check, for a host with NVIDIA GPUs and a CUDA LibTorch:
#   tests/bench/gpu_check.sh [/path/to/libtorch] [build-dir (build-gpu)]
# Without a path it finds a CUDA LibTorch: $HPO_LIBTORCH, the one inside a
# CUDA PyTorch installation (torch.utils.cmake_prefix_path), /opt/libtorch or
# /usr/local/libtorch; it says what is missing when there is none.
# Builds hpo against that LibTorch, starts the real service (hpo-scheduler with
# its embedded Redis, a GPU worker offering every GPU with four slots per GPU,
# and a CPU worker that sees none), and runs through it:
#   1. a torch trial (mlp on 12,000 Fashion-MNIST images, 2 epochs) on cuda:0
#      (resources.gpus 1), and the same trial on the CPU worker;
#   2. with two or more GPUs, the same trial data-parallel over 2 GPUs (NCCL);
#   3. a 2-member ensemble on the GPU worker, then `hpo predict --device cuda`
#      on the 10,000 test images;
#   4. four trials packed on one GPU (resources.gpus 0.25), their samples/s
#      together against one trial alone, and the GPU memory each used.
# Prints samples/s of each and the GPU/CPU ratio; exits non-zero when a step
# fails. Needs jq, curl and nvidia-smi.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)

# A CUDA LibTorch: its folder holds lib/libtorch_cuda.so (torch.utils.cmake_prefix_path
# is <torch>/share/cmake, two folders below it).
cuda_libtorch() {
  local d
  for d in "$@"; do
    [[ -n $d && -e $d/lib/libtorch_cuda.so ]] && { echo "$d"; return 0; }
    [[ -n $d && -e $d/../../lib/libtorch_cuda.so ]] && { echo "$d"; return 0; }
  done
  return 1
}
py_torch=$(python3 -c 'import sys, torch; sys.stdout.write(torch.utils.cmake_prefix_path if torch.version.cuda else "")' 2>/dev/null || true)
if [[ $# -ge 1 && -n $1 ]]; then
  libtorch=$1
  cuda_libtorch "$libtorch" >/dev/null ||
    { echo "gpu_check: $libtorch has no lib/libtorch_cuda.so: not a CUDA LibTorch" >&2; exit 2; }
elif ! libtorch=$(cuda_libtorch "${HPO_LIBTORCH:-}" "$py_torch" /opt/libtorch /usr/local/libtorch); then
  {
    echo "gpu_check: no CUDA LibTorch found. Looked at:"
    echo "  \$HPO_LIBTORCH: ${HPO_LIBTORCH:-(unset)}"
    echo "  a CUDA PyTorch (python3 -c 'import torch'): ${py_torch:-none, or a CPU-only one}"
    echo "  /opt/libtorch, /usr/local/libtorch"
    echo "Debian's LibTorch is CPU-only. Install a CUDA PyTorch (pip install torch) or unpack"
    echo "LibTorch for CUDA from pytorch.org, then: tests/bench/gpu_check.sh /path/to/libtorch"
  } >&2
  exit 2
fi
build=${2:-build-gpu}
echo "gpu_check: LibTorch $libtorch"
fashion=/usr/share/datasets/fashion-mnist
source "$src/tests/bench/service.sh"

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$libtorch" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
((ngpu > 0)) || { echo "gpu_check: nvidia-smi lists no GPU" >&2; exit 1; }
echo "gpu_check: $ngpu GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"

service_start "$build" 0 0
trap 'kill ${pids[*]:-} "$SERVICE_SCHEDULER" 2>/dev/null || true' EXIT
pids=()
HPO_HOME=$SERVICE_HOME "$build/workers/hpo-worker" --name gpu --label device=gpu --slots $((ngpu * 4)) \
  >"$SERVICE_HOME/worker-gpu.log" 2>&1 &
pids+=($!)
HPO_HOME=$SERVICE_HOME CUDA_VISIBLE_DEVICES='' "$build/workers/hpo-worker" --name cpu --slots 1 \
  --label device=cpu >"$SERVICE_HOME/worker-cpu.log" 2>&1 &
pids+=($!)

# spec NAME DEVICE GPUS REPLICAS [ENSEMBLE_MEMBERS [TRIALS]]
spec() {
  jq -nc --arg name "$1" --arg dev "$2" --argjson gpus "$3" --argjson k "$4" \
    --argjson members "${5:-0}" --argjson n "${6:-1}" --arg d "$fashion" '{
    name: $name, objective: {metric: "val_accuracy", mode: "max"},
    parameters: {lr: {type: "categorical", values: [0.001, 0.0011, 0.0012, 0.0013][0:$n]}},
    search: {algorithm: "grid", max_trials: $n, max_concurrent: $n},
    trial: {kind: "torch", task: "classification",
      model: {type: "mlp", hidden: 256, depth: 2},
      data: {format: "idx", train_images: "\($d)/train-images-idx3-ubyte.gz",
             train_labels: "\($d)/train-labels-idx1-ubyte.gz",
             test_images: "\($d)/t10k-images-idx3-ubyte.gz",
             test_labels: "\($d)/t10k-labels-idx1-ubyte.gz",
             validation_fraction: 0.1, subset: 12000},
      optimizer: {type: "adam", lr: "{lr}"}, batch_size: 128, epochs: 2, timeout_s: 1800,
      max_attempts: 1,
      resources: {gpus: $gpus, labels: ["device=\($dev)"]},
      data_parallel: {replicas: $k}}}
    + (if $members > 0 then {ensemble: {members: $members, base: "best", combine: "soft_vote",
                                        epochs: 1, subset: 12000}} else {} end)'
}

# submit NAME SPEC: submits and waits (SERVICE_SWEEP, SERVICE_DOC).
# run NAME SPEC: the same, then prints the trial's samples/s; sets SPS.
submit() {
  SERVICE_SWEEP=$(curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" \
    -H 'Content-Type: application/json' -d "$2" "$SERVICE_API/api/sweeps" | jq -r .id)
  [[ -n $SERVICE_SWEEP && $SERVICE_SWEEP != null ]] || { echo "gpu_check: $1: submit refused" >&2; return 1; }
  service_wait 1
}
run() {
  submit "$@"
  local trial
  trial=$(curl -sf "$SERVICE_API/api/trials/$SERVICE_SWEEP-0")
  if [[ $(jq -r .state <<<"$SERVICE_DOC") != finished || $(jq -r .state <<<"$trial") != completed ]]; then
    echo "gpu_check: $1: $(jq -c '{state, error, unschedulable}' <<<"$SERVICE_DOC") $(jq -r .error <<<"$trial")" >&2
    return 1
  fi
  SPS=$(jq -r '.metrics.train_samples_per_s' <<<"$trial")
  printf '%-28s %10.0f samples/s  val_accuracy %.4f  (worker %s)\n' "$1" "$SPS" \
    "$(jq -r '.metrics.val_accuracy' <<<"$trial")" "$(jq -r .worker <<<"$trial")"
}

run "torch trial on cuda:0" "$(spec gpu-1 gpu 1 1)"
gpu_sps=$SPS
run "the same trial on CPU" "$(spec cpu-1 cpu 0 1)"
cpu_sps=$SPS
printf 'cuda:0 / CPU: %.1fx\n' "$(jq -n --argjson g "$gpu_sps" --argjson c "$cpu_sps" '$g / $c')"
if ((ngpu >= 2)); then
  run "data-parallel, 2 GPUs (NCCL)" "$(spec gpu-2 gpu 2 2)"
  printf '2 GPUs / 1 GPU: %.2fx\n' "$(jq -n --argjson a "$SPS" --argjson b "$gpu_sps" '$a / $b')"
else
  echo "data-parallel over 2 GPUs: skipped (one GPU)"
fi
run "ensemble base trial on GPU" "$(spec ens gpu 1 1 2)"
out=$SERVICE_HOME/predictions.csv
HPO_HOME=$SERVICE_HOME "$build/cli/hpo" predict --sweep "$SERVICE_SWEEP" \
  "$fashion/t10k-images-idx3-ubyte.gz" --output "$out" --device cuda
echo "hpo predict --device cuda: $(($(wc -l <"$out") - 1)) rows predicted"
# Four trials packed on one GPU against one alone (both on the GPU worker).
submit "4 trials of gpus 0.25" "$(spec packed gpu 0.25 1 0 4)"
if [[ $(jq -r .state <<<"$SERVICE_DOC") != finished ]]; then
  echo "gpu_check: packed: $(jq -c '{state, error, unschedulable}' <<<"$SERVICE_DOC")" >&2
  exit 1
fi
packed=0
for i in 0 1 2 3; do
  trial=$(curl -sf "$SERVICE_API/api/trials/$SERVICE_SWEEP-$i")
  [[ $(jq -r .state <<<"$trial") == completed ]] ||
    { echo "gpu_check: packed trial $i: $(jq -r .error <<<"$trial")" >&2; exit 1; }
  sps=$(jq -r .metrics.train_samples_per_s <<<"$trial")
  printf '  packed trial %d: %8.0f samples/s  GPU memory peak %s MB, utilisation mean %s %%\n' "$i" \
    "$sps" "$(jq -r '.metrics["gpu.memory_peak_mb"] // "?"' <<<"$trial")" \
    "$(jq -r '.metrics["gpu.util_mean_pct"] // "?"' <<<"$trial")"
  packed=$(jq -n --argjson a "$packed" --argjson b "$sps" '$a + $b')
done
printf '4 packed on one GPU: %.0f samples/s together, %.2fx one trial alone (%.0f)\n' "$packed" \
  "$(jq -n --argjson a "$packed" --argjson b "$gpu_sps" '$a / $b')" "$gpu_sps"
