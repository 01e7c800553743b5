#!/bin/bash
# Multi-objective search: hypervolume after 100/200/400 trials on ZDT1, ZDT2
# (two objectives) and DTLZ2 (three), hpo's NSGA-II and random search side by
# side with Optuna's NSGAIISampler and RandomSampler, in one run; ratio = hpo
# nsga2 / optuna-nsga2 (medians). Usage (from the repository root):
#   tests/bench/pareto_bench.sh [--build DIR] [--seeds 10] [--budgets 100,200,400]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=10
budgets=100,200,400
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --budgets) budgets=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin=$build/tests/bench/search_bench
[ -x "$bin" ] || { echo "build it first: cmake --build $build --target search_bench" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --pareto --seeds "$seeds" --budgets "$budgets" > "$out"
/usr/bin/python3 "$here/search_pareto_optuna.py" --seeds "$seeds" --budgets "$budgets" >> "$out"
printf '%-7s %7s %22s %22s %22s %22s %7s\n' function trials "hpo nsga2" "optuna nsga2" \
  "hpo random" "optuna random" ratio
awk -F'\t' '$1 == "hv" { v[$2 FS $4 FS $3] = $5 " [" $6 ", " $7 "]"; m[$2 FS $4 FS $3] = $5;
                         if (!($2 FS $4 in seen)) { seen[$2 FS $4] = 1; order[n++] = $2 FS $4 } }
  END { for (i = 0; i < n; i++) { split(order[i], k, FS); key = order[i] FS;
          r = m[key "optuna-nsga2"] > 0 ? sprintf("%.2f", m[key "nsga2"] / m[key "optuna-nsga2"]) : "-";
          printf "%-7s %7s %22s %22s %22s %22s %7s\n", k[1], k[2], v[key "nsga2"],
                 v[key "optuna-nsga2"], v[key "random"], v[key "optuna-random"], r } }' "$out"
echo "(median hypervolume [q25, q75] over $seeds seeds; reference 1.1 per objective)"
