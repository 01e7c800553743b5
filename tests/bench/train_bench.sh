#!/bin/sh
# Training throughput: the C++ trainer (workers/torch) vs PyTorch for Python on
# the same models, data, batch size (128), optimiser (SGD, momentum 0.9) and
# threads, plus the trainer vs a bare forward+backward loop over pre-made
# batches. Rounds alternate C++ and Python so that a load change on a shared
# machine hits both sides; the table shows the median of the rounds.
# Not a test: prints figures and ratios.
#   tests/bench/train_bench.sh [build-dir] [threads=2] [mlp_rows=60000] [cnn_rows=6400] [rounds=3]
# NO_BUILD=1 skips rebuilding train_bench.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
threads=${2:-2}
mlp_rows=${3:-60000}
cnn_rows=${4:-6400}
rounds=${5:-3}
[ -n "${NO_BUILD:-}" ] || cmake --build "$build" --target train_bench -j2 >/dev/null
export OPENBLAS_NUM_THREADS=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "$(date -u +%FT%TZ) threads=$threads mlp_rows=$mlp_rows cnn_rows=$cnn_rows rounds=$rounds batch=128 load: $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
while [ "$i" -lt "$rounds" ]; do
  "$build/tests/bench/train_bench" "$threads" "$mlp_rows" "$cnn_rows" >>"$out"
  /usr/bin/python3 "$here/train_torch_ref.py" "$threads" "$mlp_rows" "$cnn_rows" >>"$out"
  i=$((i + 1))
done
awk '/^RESULT/ { n[$2]++; v[$2, n[$2]] = $3 }
  function median(name,   k, i, j, t, a) {
    k = n[name]; if (!k) return 0
    for (i = 1; i <= k; i++) a[i] = v[name, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    printf "%-5s %12s %12s %12s %11s %13s\n", "model", "trainer s/s", "python s/s", "bare s/s", "vs python", "trainer/bare"
    split("mlp cnn", m, " ")
    for (i = 1; i <= 2; i++) {
      t = median(m[i] "_trainer"); p = median(m[i] "_python"); b = median(m[i] "_bare")
      printf "%-5s %12.0f %12.0f %12.0f %10.2fx %12.1f%%\n", m[i], t, p, b, (p > 0 ? t / p : 0), (b > 0 ? 100 * t / b : 0)
    }
  }' "$out"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
