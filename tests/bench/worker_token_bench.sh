#!/usr/bin/env bash
# What a worker token costs through the real service: the same sweep of N
# synthetic trials that do no work (so that what is measured is hpo: claims,
# heartbeats, reports, results), on one build, with its workers on the Redis
# URL (the shared hpo-worker user) and with worker tokens (every store call
# an HTTP request to the scheduler's worker endpoint, checked by its relay),
# in alternation, `rounds` times each. Prints trials/s of each and the ratio
# of their medians (this machine is noisy; alternation spreads the noise).
#
#   tests/bench/worker_token_bench.sh BUILD [trials] [workers] [slots] [concurrent] [rounds]
#   e.g. tests/bench/worker_token_bench.sh build 1000 2 4 16 3
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?build dir}
trials=${2:-1000}
workers=${3:-2}
slots=${4:-4}
concurrent=${5:-16}
rounds=${6:-3}

source tests/bench/service.sh

service_banner
echo "worker_token_bench $(git rev-parse --short HEAD): $trials synthetic trials (no work)," \
  "$workers workers of $slots slots, max_concurrent $concurrent"
declare -a redis_runs=() token_runs=()
for r in $(seq "$rounds"); do
  redis_runs+=("$(SERVICE_WORKER_TOKENS=0 service_rate "$build" "$workers" "$slots" "$trials" "$concurrent" 1)")
  echo "  round $r: Redis URL     ${redis_runs[-1]} trials/s"
  token_runs+=("$(SERVICE_WORKER_TOKENS=1 service_rate "$build" "$workers" "$slots" "$trials" "$concurrent" 1)")
  echo "  round $r: worker token  ${token_runs[-1]} trials/s"
done
redis_med=$(printf '%s\n' "${redis_runs[@]}" | service_median)
token_med=$(printf '%s\n' "${token_runs[@]}" | service_median)
echo "median Redis URL: $redis_med trials/s"
echo "median worker token: $token_med trials/s"
python3 -c "print(f'ratio worker token / Redis URL: {$token_med / $redis_med:.2f}')"
