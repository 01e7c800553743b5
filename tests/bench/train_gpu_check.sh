#!/bin/sh
# GPU check: builds train_bench against a CUDA LibTorch and trains the benchmark
# models (cnn conv32-conv64-pool-fc128-fc10, mlp 784-256-128-10, batch 128) on
# cuda:N through the real trainer, printing samples/s ("DEVICE cuda:N" first;
# "DEVICE cpu" and a warning mean the LibTorch has no CUDA).
#   tests/bench/train_gpu_check.sh /path/to/libtorch [build-dir=build-gpu] [gpu=0]
set -eu
libtorch=$1
build=${2:-build-gpu}
gpu=${3:-0}
src=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$src" -B "$build" -DHPO_WITH_TORCH=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$libtorch" >/dev/null
cmake --build "$build" --target train_bench -j"$(nproc)" >/dev/null
HPO_BENCH_GPU=$gpu OPENBLAS_NUM_THREADS=1 "$build/tests/bench/train_bench" 2 60000 60000
