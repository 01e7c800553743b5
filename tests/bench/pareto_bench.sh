#!/bin/bash
# Multi-objective search: hypervolume after 100 and 300 trials on ZDT1, ZDT2,
# ZDT3 (two objectives; ZDT3's front is five disconnected pieces and its f2
# goes below 0, which both sides' hypervolumes count in full) and DTLZ2
# (three), median of 10 seeds. hpo's bayesian
# with several objectives (a GP per objective + expected hypervolume
# improvement, search/ehvi_sampler.hpp; with each objective's reference
# declared as a spec's `objectives` allow, and without), its tpe (MOTPE with
# several objectives), its NSGA-II and
# random search, side by side with Optuna's NSGAIISampler, multi-objective
# TPESampler (MOTPE) and RandomSampler in the same run (hpo and Optuna run
# at once, one process each: the figures are hypervolumes, not times).
# ratio = hpo bayesian / the better of Optuna's NSGA-II and MOTPE (medians).
# Usage (from the repository root):
#   tests/bench/pareto_bench.sh [--build DIR] [--seeds 10] [--budgets 100,300]
#                               [--functions zdt1,zdt2,zdt3,dtlz2]
#   tests/bench/pareto_bench.sh --from ROWS...   (the table of rows printed by an earlier run)
# --functions goes to both sides (search_bench --pareto, search_pareto_optuna.py).
# Issue 41's target is measured with --budgets 80,200 (the default stays
# 100,300, the budgets of the figures in README.md):
#   tests/bench/pareto_bench.sh --seeds 10 --budgets 80,200
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
seeds=10
budgets=100,300
functions=zdt1,zdt2,zdt3,dtlz2
from=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --budgets) budgets=$2; shift 2 ;;
    --functions) functions=$2; shift 2 ;;
    --from) shift; from=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp)
trap 'rm -f "$out" "$out".*' EXIT
if [ ${#from[@]} -gt 0 ]; then
  cat "${from[@]}" > "$out"
else
  bin=$build/tests/bench/search_bench
  [ -x "$bin" ] || { echo "build it first: cmake --build $build --target search_bench" >&2; exit 2; }
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# functions: $functions; budgets: $budgets; seeds: $seeds"
  "$bin" --pareto --seeds "$seeds" --budgets "$budgets" --functions "$functions" \
    --samplers ehvi,ehvi-noref,tpe,nsga2,random > "$out.hpo" &
  hpo=$!
  /usr/bin/python3 "$here/search_pareto_optuna.py" --seeds "$seeds" --budgets "$budgets" \
    --functions "$functions" > "$out.optuna"
  wait "$hpo"
  cat "$out.hpo" "$out.optuna" > "$out"
  cat "$out"
fi
printf '%-6s %6s %20s %20s %20s %20s %20s %20s %20s %20s %6s\n' function trials "hpo bayesian" \
  "hpo bayesian no-ref" "hpo tpe (motpe)" "hpo nsga2" "optuna nsga2" "optuna motpe" "hpo random" \
  "optuna random" ratio
awk -F'\t' '$1 == "hv" { v[$2 FS $4 FS $3] = $5 " [" $6 ", " $7 "]"; m[$2 FS $4 FS $3] = $5;
                         if (!($2 FS $4 in seen)) { seen[$2 FS $4] = 1; order[n++] = $2 FS $4 } }
  END { for (i = 0; i < n; i++) { split(order[i], k, FS); key = order[i] FS;
          best = m[key "optuna-nsga2"] > m[key "optuna-motpe"] ? m[key "optuna-nsga2"] : m[key "optuna-motpe"];
          r = best > 0 ? sprintf("%.2f", m[key "ehvi"] / best) : "-";
          printf "%-6s %6s %20s %20s %20s %20s %20s %20s %20s %20s %6s\n", k[1], k[2], v[key "ehvi"],
                 v[key "ehvi-noref"], v[key "tpe"], v[key "nsga2"], v[key "optuna-nsga2"],
                 v[key "optuna-motpe"], v[key "random"], v[key "optuna-random"], r } }' "$out"
ran=$(awk -F'\t' '$1 == "hv" && !seen[$2]++ { print $2 }' "$out" | paste -sd, -)
echo "(median hypervolume [q25, q75] over the seeds; reference 1.1 per objective)"
echo "functions run: ${ran:-none}"
