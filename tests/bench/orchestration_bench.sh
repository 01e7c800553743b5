#!/usr/bin/env bash
# Orchestration throughput through the real service: hpo-scheduler (embedded
# Redis) and one hpo-worker run a sweep of N synthetic trials that do no work
# (sleep_s 0, random sampler), so what is measured is hpo itself: the
# controller creating trials, the queue, claims, heartbeats, results, events.
# The sweep's own clock (its created_ms and finished_ms, Redis time) gives
# trials/s. Given a second build directory, both builds run the same sweep in
# alternation, `rounds` times each, and the ratio of their medians is printed
# (this machine is noisy; alternation spreads the noise over both).
#
#   tests/bench/orchestration_bench.sh BUILD [OTHER_BUILD] [trials] [slots] [concurrent] [rounds]
#   e.g. tests/bench/orchestration_bench.sh build /tmp/before/build 2000 4 16 3
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?build dir}
other=${2:-}
trials=${3:-2000}
slots=${4:-4}
concurrent=${5:-16}
rounds=${6:-3}

source tests/bench/service.sh

echo "orchestration_bench $(date -u '+%F %H:%M') UTC on $(nproc) cores, $(git rev-parse --short HEAD):" \
  "$trials synthetic trials (no work), worker of $slots slots, max_concurrent $concurrent"
declare -a a_runs=() b_runs=()
for r in $(seq "$rounds"); do
  a_runs+=("$(service_rate "$build" 1 "$slots" "$trials" "$concurrent")")
  echo "  round $r: $build ${a_runs[-1]} trials/s"
  if [[ -n $other ]]; then
    b_runs+=("$(service_rate "$other" 1 "$slots" "$trials" "$concurrent")")
    echo "  round $r: $other ${b_runs[-1]} trials/s"
  fi
done
a_med=$(printf '%s\n' "${a_runs[@]}" | service_median)
echo "median $build: $a_med trials/s"
if [[ -n $other ]]; then
  b_med=$(printf '%s\n' "${b_runs[@]}" | service_median)
  echo "median $other: $b_med trials/s"
  python3 -c "print(f'ratio {\"$build\"} / {\"$other\"}: {$a_med / $b_med:.2f}')"
fi
