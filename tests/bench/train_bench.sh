#!/bin/sh
# Training throughput: the C++ trainer (workers/torch) vs PyTorch for Python on
# the same models, data, batch size (128) and threads, plus the trainer vs a bare
# forward+backward loop. Not a test: prints figures and ratios.
#   tests/bench/train_bench.sh [build-dir] [threads=2] [mlp_rows=60000] [cnn_rows=6400]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
threads=${2:-2}
mlp_rows=${3:-60000}
cnn_rows=${4:-6400}
cmake --build "$build" --target train_bench -j2 >/dev/null
export OPENBLAS_NUM_THREADS=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "$(date -u +%FT%TZ) threads=$threads mlp_rows=$mlp_rows cnn_rows=$cnn_rows batch=128 sgd(momentum 0.9)"
"$build/tests/bench/train_bench" "$threads" "$mlp_rows" "$cnn_rows" | tee -a "$out"
/usr/bin/python3 "$here/train_torch_ref.py" "$threads" "$mlp_rows" "$cnn_rows" | tee -a "$out"
awk '/^RESULT/ { v[$2] = $3 }
  END {
    printf "\n%-5s %14s %14s %14s %10s %14s\n", "model", "trainer s/s", "python s/s", "bare s/s", "vs python", "trainer/bare"
    split("mlp cnn", m, " ")
    for (i = 1; i <= 2; i++) {
      t = v[m[i] "_trainer"]; p = v[m[i] "_python"]; b = v[m[i] "_bare"]
      printf "%-5s %14.0f %14.0f %14.0f %9.2fx %13.1f%%\n", m[i], t, p, b, (p > 0 ? t / p : 0), (b > 0 ? 100 * t / b : 0)
    }
  }' "$out"
