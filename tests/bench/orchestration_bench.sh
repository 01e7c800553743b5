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

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# One sweep on build $1; prints trials/s.
run_once() {
  local b=$1 home port sched worker
  home=$(mktemp -d /tmp/hpo-orch.XXXXXX)
  port=$(free_port)
  HPO_HOME=$home "$b/scheduler/hpo-scheduler" --listen "127.0.0.1:$port" >"$home/scheduler.log" 2>&1 &
  sched=$!
  for _ in $(seq 600); do [[ -s $home/scheduler.json ]] && break; sleep 0.1; done
  [[ -s $home/scheduler.json ]] || { cat "$home/scheduler.log" >&2; return 1; }
  HPO_HOME=$home "$b/workers/hpo-worker" --slots "$slots" --name bench >"$home/worker.log" 2>&1 &
  worker=$!
  local token api
  token=$(jq -r .token "$home/scheduler.json")
  api=$(jq -r .api "$home/scheduler.json")
  local spec
  spec=$(jq -nc --argjson n "$trials" --argjson c "$concurrent" '{
    name: "orchestration", objective: {metric: "value", mode: "min"},
    parameters: {x1: {type: "float", min: -5, max: 10}, x2: {type: "float", min: 0, max: 15}},
    search: {algorithm: "random", max_trials: $n, max_concurrent: $c, seed: 1},
    trial: {kind: "synthetic", function: "branin", sleep_s: 0}}')
  local id
  id=$(curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d "$spec" "$api/api/sweeps" | jq -r .id)
  local doc state
  for _ in $(seq 36000); do  # up to an hour, polled every 0.1 s
    doc=$(curl -sf "$api/api/sweeps/$id" || true)
    state=$(jq -r .state <<<"$doc" 2>/dev/null || echo "?")
    [[ $state == running || $state == "?" ]] || break
    sleep 0.1
  done
  kill -TERM "$worker" "$sched" 2>/dev/null || true
  wait "$worker" "$sched" 2>/dev/null || true
  local done_n created finished
  done_n=$(jq '.counts.completed' <<<"$doc")
  created=$(jq '.created_ms' <<<"$doc")
  finished=$(jq '.finished_ms' <<<"$doc")
  rm -rf "$home"
  if [[ $state != finished || $done_n != "$trials" ]]; then
    echo "sweep ended $state with $done_n of $trials completed" >&2
    return 1
  fi
  python3 -c "print(f'{$trials / (($finished - $created) / 1000):.1f}')"
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
