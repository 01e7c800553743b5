#!/bin/bash
# Population-based training against random search with the same total
# budget on the noisy quadratic (pbt_bench.cpp: the scheduler's PBT schedule
# on a simulated pool), median [quartiles] of the best final loss over the
# seeds, with the best fixed learning rate of all for context.
# Usage (from the repository root):
#   tests/bench/pbt_bench.sh [--build DIR] [--seeds 20] [--population 8] [--interval 5] [--steps 100]
set -euo pipefail
build=${BUILD_DIR:-build}
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds|--population|--interval|--steps|--workers) args+=("$1" "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/tests/bench/pbt_bench
[ -x "$bin" ] || { echo "build it first: cmake --build $build --target pbt_bench" >&2; exit 2; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores; pbt_bench ${args[*]}"
"$bin" "${args[@]}" | python3 -c '
import statistics, sys
rows, oracle = {}, None
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    if f[0] == "oracle":
        oracle = (f[1], float(f[2]))
    else:
        rows.setdefault(f[1], []).append((float(f[3]), float(f[4]), int(f[5])))
print("| method | best final loss, median [q25, q75] | budget (steps) | exploits |")
print("|---|---|---|---|")
for m, v in rows.items():
    x = sorted(a for a, _, _ in v)
    q = statistics.quantiles(x, n=4)
    print("| %s | %.5f [%.5f, %.5f] | %g | %g |" % (m, statistics.median(x), q[0], q[2],
          statistics.median(b for _, b, _ in v), statistics.median(e for _, _, e in v)))
print("| (%s) | %.5f | | |" % oracle)
'
