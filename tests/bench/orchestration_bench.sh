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

# One sweep on build $1; prints trials/s.
run_once() {
  service_start "$1" 1 "$slots" || return 1
  service_sweep "$trials" "$concurrent" branin || { service_stop; return 1; }
  service_wait || true
  local rate
  rate=$(service_trials_per_s "$trials") || { service_stop; return 1; }
  service_stop
  echo "$rate"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "orchestration_bench $(date -u '+%F %H:%M') UTC on $(nproc) cores, $(git rev-parse --short HEAD):" \
  "$trials synthetic trials (no work), worker of $slots slots, max_concurrent $concurrent"
declare -a a_runs=() b_runs=()
for r in $(seq "$rounds"); do
  a_runs+=("$(run_once "$build")")
  echo "  round $r: $build ${a_runs[-1]} trials/s"
  if [[ -n $other ]]; then
    b_runs+=("$(run_once "$other")")
    echo "  round $r: $other ${b_runs[-1]} trials/s"
  fi
done
a_med=$(printf '%s\n' "${a_runs[@]}" | median)
echo "median $build: $a_med trials/s"
if [[ -n $other ]]; then
  b_med=$(printf '%s\n' "${b_runs[@]}" | median)
  echo "median $other: $b_med trials/s"
  python3 -c "print(f'ratio {\"$build\"} / {\"$other\"}: {$a_med / $b_med:.2f}')"
fi
