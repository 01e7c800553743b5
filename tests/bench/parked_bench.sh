#!/usr/bin/env bash
# A scheduler with a thousand parked sweeps (issue 39): what they cost it, and
# what they cost a sweep that runs beside them. Through the real service
# (hpo-scheduler with its embedded Redis, 1 worker): first a sweep of N
# `synthetic` `noop` trials alone (trials/s, the reference), then P sweeps
# that can never run (each asks for 4 GPUs; the worker has none: they park,
# `unschedulable`), then the same sweep again beside them. Prints the
# scheduler's threads, open descriptors and RSS alone and with the parked
# sweeps, and the running sweep's trials/s in both runs and their ratio.
#
#   tests/bench/parked_bench.sh [build] [parked] [trials]   (defaults: build 1000 2000)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
parked=${2:-1000}
trials=${3:-2000}
source tests/bench/service.sh
service_banner
echo "parked_bench $(git rev-parse --short HEAD): $parked parked sweeps, a sweep of $trials noop trials, 1 worker x 4 slots"
trap 'service_stop 2>/dev/null' EXIT

threads() { awk '/^Threads:/ {print $2}' "/proc/$1/status"; }
rss_mib() { awk '/^VmRSS:/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }
figures() { echo "$(threads "$SERVICE_SCHEDULER") $(fds "$SERVICE_SCHEDULER") $(rss_mib "$SERVICE_SCHEDULER")"; }
run_sweep() {  # prints trials/s of a fresh noop sweep
  service_sweep "$trials" 16
  service_wait 0.05
  service_trials_per_s "$trials"
}

service_start "$build" 1 4
for _ in $(seq 300); do
  (($(curl -sf "$SERVICE_API/api/workers" | jq '.workers | length' 2>/dev/null || echo 0) >= 1)) && break
  sleep 0.1
done
alone=$(run_sweep)
read -r t0 f0 r0 <<<"$(figures)"

parked_spec=$(jq -nc '{name: "parked", objective: {metric: "value", mode: "min"},
  parameters: {x: {type: "float", min: 0, max: 1}},
  search: {algorithm: "random", max_trials: 4},
  trial: {kind: "synthetic", function: "noop", resources: {gpus: 4}}}')
for _ in $(seq "$parked"); do service_submit "$parked_spec"; done
# Every parked sweep controlled (its trials created and queued aside): the
# schedulability watch has marked each one.
unschedulable() {  # pages of 1,000
  local offset total=0 page
  for ((offset = 0; ; offset += 1000)); do
    page=$(curl -sf "$SERVICE_API/api/sweeps?limit=1000&offset=$offset")
    total=$((total + $(jq '[.sweeps[] | select(.unschedulable != "")] | length' <<<"$page")))
    (($(jq '.sweeps | length' <<<"$page") == 1000)) || break
  done
  echo "$total"
}
for _ in $(seq 1200); do
  n=$(unschedulable)
  ((n >= parked)) && break
  sleep 0.5
done
echo "parked sweeps marked unschedulable: $n of $parked"
read -r t1 f1 r1 <<<"$(figures)"
beside=$(run_sweep)
printf '%-34s %8s %8s %8s %10s\n' "scheduler" "threads" "fds" "RSS MiB" "trials/s"
printf '%-34s %8s %8s %8s %10s\n' "alone" "$t0" "$f0" "$r0" "$alone"
printf '%-34s %8s %8s %8s %10s\n' "beside $parked parked sweeps" "$t1" "$f1" "$r1" "$beside"
echo "ratio (beside / alone): $(echo "$beside / $alone" | bc -l | cut -c1-4)"
