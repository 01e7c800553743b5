#!/usr/bin/env bash
# One sweep of many cheap trials (issue 13's 100k figures), through the real
# service: hpo-scheduler (embedded Redis, appendfsync always) and W workers of
# S slots run N `synthetic` `noop` trials. Prints the sweep's trials/s over
# its whole run and per 10% of it (a rate that falls as the sweep grows is
# work per step growing with the sweep), the scheduler's peak resident
# memory, Redis's memory per finished trial (used_memory after the sweep minus
# before, over N: trial hashes, attempt records, lists, and the event stream,
# capped at 100,000 entries), and the time of the API calls the dashboard
# makes: the sweep document, and a page of 100 trials sorted by value and by
# a parameter (curl's time_total, the median and the slowest of 20; the very
# first sorted page, which loads every trial into the API's cache, apart).
#
#   tests/bench/scale_bench.sh [build] [trials] [workers] [slots] [concurrent]
#   defaults: build 100000 2 16 128
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
trials=${2:-100000}
workers=${3:-2}
slots=${4:-16}
concurrent=${5:-128}
source tests/bench/service.sh

used_memory() { service_redis_cli INFO memory | awk -F: '/^used_memory:/ {print $2+0}'; }
# time_total of GET URL, 20 times: "median max" in ms
timed() {
  for _ in $(seq 20); do curl -sf -o /dev/null -w '%{time_total}\n' "$1"; done |
    sort -n | awk '{a[NR]=$1*1000} END {printf "%.1f %.1f", a[int((NR+1)/2)], a[NR]}'
}

echo "scale_bench $(date -u '+%F %H:%M') UTC on $(nproc) cores, $(git rev-parse --short HEAD):" \
  "$trials synthetic noop trials, $workers workers x $slots slots, max_concurrent $concurrent"
service_start "$build" "$workers" "$slots"
trap service_stop EXIT
service_wait_workers "$workers"  # every worker registered before the clock starts
mem0=$(used_memory)
service_sweep "$trials" "$concurrent"
# The sweep's progress every 10%, from its own counters (Redis time is not
# needed: these are rates between polls of a growing count).
marks=()
next=$((trials / 10))
start=$(date +%s.%N)
while :; do
  doc=$(curl -sf "$SERVICE_API/api/sweeps/$SERVICE_SWEEP")
  done_n=$(jq '.counts.completed + .counts.failed + .counts.pruned + .counts.cancelled' <<<"$doc")
  if ((done_n >= next)); then
    marks+=("$done_n $(date +%s.%N)")
    next=$((next + trials / 10))
  fi
  [[ $(jq -r .state <<<"$doc") != running ]] && break
  sleep 0.2
done
service_wait
rate=$(service_trials_per_s "$trials")
mem1=$(used_memory)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$SERVICE_SCHEDULER/status")
echo "hpo: $rate trials/s over the whole sweep; scheduler peak RSS $((rss / 1024)) MB;" \
  "Redis $(((mem1 - mem0) / trials)) bytes per finished trial"
prev_n=0
prev_t=$start
for m in "${marks[@]}"; do
  read -r n t <<<"$m"
  python3 -c "print(f'  up to {$n:>7} finished: {($n - $prev_n) / ($t - $prev_t):8.1f} trials/s')"
  prev_n=$n
  prev_t=$t
done
api=$SERVICE_API/api/sweeps/$SERVICE_SWEEP
cold=$(curl -sf -o /dev/null -w '%{time_total}' "$api/trials?sort=value&limit=100")
read -r d50 dmax <<<"$(timed "$api")"
read -r v50 vmax <<<"$(timed "$api/trials?sort=value&limit=100")"
read -r p50 pmax <<<"$(timed "$api/trials?sort=-param:x1&limit=100")"
echo "GET sweep: median $d50 ms, max $dmax ms; page of 100 by value: median $v50 ms, max $vmax ms;" \
  "by param x1 (descending): median $p50 ms, max $pmax ms; the first sorted page (cache cold)" \
  "$(python3 -c "print(round($cold * 1000))") ms"
