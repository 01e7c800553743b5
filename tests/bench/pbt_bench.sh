#!/bin/bash
# Population-based training against random search with the same total budget
# on the noisy quadratic in --dims dimensions (pbt_bench.cpp: SGD with gradient
# noise; members finish in member order on a simulated pool), the scheduler's
# PBT beside Ray Tune's rule written out in the bench. Prints the median
# [quartiles] of the best final loss over the seeds, on how many seeds each PBT
# beat random search, and the exploits per member and generation.
# Usage (from the repository root):
#   tests/bench/pbt_bench.sh [--build DIR] [--seeds 10] [--population 8] [--interval 5]
#                            [--steps 100] [--workers 8] [--dims 1000]
set -euo pipefail
build=${BUILD_DIR:-build}
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds|--population|--interval|--steps|--workers|--dims) args+=("$1" "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/tests/bench/pbt_bench
[ -x "$bin" ] || { echo "build it first: cmake --build $build --target pbt_bench" >&2; exit 2; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores; pbt_bench ${args[*]}"
"$bin" "${args[@]}" | python3 -c '
import collections, statistics, sys
rows, oracle = collections.OrderedDict(), None
exploits = collections.defaultdict(collections.Counter)  # method -> (member, generation) -> n
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    if f[0] == "oracle":
        oracle = (f[1], float(f[2]))
    elif f[0] == "exploit":
        exploits[f[1]][(int(f[2]), int(f[3]))] += 1
    else:
        rows.setdefault(f[1], {})[int(f[2])] = (float(f[3]), float(f[4]), int(f[5]))
seeds = sorted(rows["random"])
print("| method | best final loss, median [q25, q75] | beats random on | budget (steps) | exploits |")
print("|---|---|---|---|---|")
for m in ["random", "pbt", "ray"]:
    v = rows[m]
    x = sorted(a for a, _, _ in v.values())
    q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0], x[0], x[0]]
    wins = "" if m == "random" else "%d of %d seeds" % (
        sum(v[s][0] < rows["random"][s][0] for s in seeds), len(seeds))
    print("| %s | %.5f [%.5f, %.5f] | %s | %g | %g |" % (m, statistics.median(x), q[0], q[2], wins,
          statistics.median(b for _, b, _ in v.values()), statistics.median(e for _, _, e in v.values())))
print("| (%s) | %.5f | | | |" % oracle)
for m, c in exploits.items():
    members = sorted({k[0] for k in c} | set(range(max(k[0] for k in c) + 1)))
    gens = sorted({k[1] for k in c})
    print()
    print("exploits of %s over %d seeds, by member (rows) and generation (columns):" % (m, len(seeds)))
    print("| member | " + " | ".join(str(g) for g in gens) + " | all |")
    print("|---" * (len(gens) + 2) + "|")
    for mem in members:
        print("| %d | " % mem + " | ".join(str(c[(mem, g)]) for g in gens) +
              " | %d |" % sum(c[(mem, g)] for g in gens))
'
