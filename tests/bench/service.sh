# The real service for the benchmarks, sourced by orchestration_bench.sh and
# throughput_bench.sh: hpo-scheduler with its embedded Redis (AOF,
# appendfsync always) in a fresh HPO_HOME, W hpo-workers of S slots, a sweep of
# N `synthetic` `noop` trials (random sampler) submitted over REST and waited
# for. Sets SERVICE_* variables; every function returns non-zero on failure.

# service_banner: a "# " line with the time, the host, its cores and its load,
# printed first by each benchmark (its figures are read against it).
service_banner() {
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
}

service_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# service_start BUILD WORKERS SLOTS (SERVICE_WORKER_ARGS: more flags for each
# worker; SERVICE_SCHEDULER_ARGS: for the scheduler; SERVICE_WORKER_TOKENS=1:
# each worker gets a worker token and reaches the store through the
# scheduler, --scheduler, instead of the Redis URL in scheduler.json)
service_start() {
  local b=$1 workers=$2 slots=$3
  SERVICE_HOME=$(mktemp -d /tmp/hpo-bench.XXXXXX)
  local port
  port=$(service_free_port)
  # shellcheck disable=SC2086  # SERVICE_SCHEDULER_ARGS: more flags, split on purpose
  HPO_HOME=$SERVICE_HOME "$b/scheduler/hpo-scheduler" --listen "127.0.0.1:$port" \
    ${SERVICE_SCHEDULER_ARGS:-} >"$SERVICE_HOME/scheduler.log" 2>&1 &
  SERVICE_SCHEDULER=$!
  for _ in $(seq 600); do [[ -s $SERVICE_HOME/scheduler.json ]] && break; sleep 0.1; done
  [[ -s $SERVICE_HOME/scheduler.json ]] || { cat "$SERVICE_HOME/scheduler.log" >&2; return 1; }
  SERVICE_TOKEN=$(jq -r .token "$SERVICE_HOME/scheduler.json")
  SERVICE_API=$(jq -r .api "$SERVICE_HOME/scheduler.json")
  SERVICE_REDIS=$(jq -r .redis "$SERVICE_HOME/scheduler.json")
  SERVICE_WORKERS=()
  for w in $(seq "$workers"); do
    local store_args=()
    if [[ ${SERVICE_WORKER_TOKENS:-} == 1 ]]; then
      (umask 077 && curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" \
        -d "{\"host\": \"bench-$w\"}" "$SERVICE_API/api/worker-tokens" |
        jq -r .token >"$SERVICE_HOME/worker-token-$w") || return 1
      store_args=(--scheduler "$SERVICE_API" --worker-token-file "$SERVICE_HOME/worker-token-$w")
    fi
    # shellcheck disable=SC2086  # SERVICE_WORKER_ARGS: more flags, split on purpose
    HPO_HOME=$SERVICE_HOME "$b/workers/hpo-worker" --slots "$slots" --name "bench-$w" \
      "${store_args[@]}" ${SERVICE_WORKER_ARGS:-} >"$SERVICE_HOME/worker-$w.log" 2>&1 &
    SERVICE_WORKERS+=($!)
  done
}

# service_wait_workers N: waits (up to 30 s) until N workers have registered,
# so that no benchmark's clock starts while workers are still starting.
service_wait_workers() {
  local n
  for _ in $(seq 300); do
    n=$(curl -sf "$SERVICE_API/api/workers" | jq '.workers | length' 2>/dev/null || echo 0)
    ((n >= $1)) && return 0
    sleep 0.1
  done
  return 1
}

# service_submit SPEC_JSON: submits a sweep; sets SERVICE_SWEEP.
service_submit() {
  SERVICE_SWEEP=$(curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" \
    -H 'Content-Type: application/json' -d "$1" "$SERVICE_API/api/sweeps" | jq -r .id)
  [[ -n $SERVICE_SWEEP && $SERVICE_SWEEP != null ]]
}

# service_sweep TRIALS CONCURRENT [FUNCTION (noop)]: submits; sets SERVICE_SWEEP.
service_sweep() {
  service_submit "$(jq -nc --argjson n "$1" --argjson c "$2" --arg f "${3:-noop}" '{
    name: "bench", objective: {metric: "value", mode: "min"},
    parameters: {x1: {type: "float", min: -5, max: 10}, x2: {type: "float", min: 0, max: 15}},
    search: {algorithm: "random", max_trials: $n, max_concurrent: $c, seed: 1},
    trial: {kind: "synthetic", function: $f, sleep_s: 0}}')"
}

# The trial's `data` of the Fashion-MNIST benchmarks: Debian's dataset, the
# first 12,000 training images, a tenth of them held out for validation, and
# the 10,000 test images (a jq object).
SERVICE_FASHION_MNIST='{format: "idx",
  train_images: "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
  train_labels: "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
  test_images: "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
  test_labels: "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz",
  validation_fraction: 0.1, subset: 12000}'

# service_finished_trials METHOD SEED [INTERVAL_S (1)]: waits for SERVICE_SWEEP
# to end, fails unless it finished, and prints one JSON line
# {method, seed, trials: [every trial, in pages of 1,000]}.
service_finished_trials() {
  local state offset page
  service_wait "${3:-1}"
  state=$(jq -r .state <<<"$SERVICE_DOC")
  [[ $state == finished ]] || { echo "$1 seed $2: sweep $state" >&2; return 1; }
  for ((offset = 0; ; offset += 1000)); do
    page=$(curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" \
      "$SERVICE_API/api/sweeps/$SERVICE_SWEEP/trials?limit=1000&offset=$offset" | jq -c .trials)
    printf '%s\n' "$page"
    (($(jq length <<<"$page") == 1000)) || break
  done | jq -sc --arg m "$1" --argjson s "$2" '{method: $m, seed: $s, trials: add}'
}

# service_wait [INTERVAL_S (0.1)]: polls the sweep every INTERVAL_S until it
# ends (up to an hour); sets SERVICE_DOC. Each poll costs a curl and a jq
# process (~10 ms of CPU): a bench whose figure is the trials' own training
# speed polls every second, so as not to take a core's tenth from them.
service_wait() {
  local state interval=${1:-0.1} deadline=$((SECONDS + 3600))
  while ((SECONDS < deadline)); do
    SERVICE_DOC=$(curl -sf "$SERVICE_API/api/sweeps/$SERVICE_SWEEP" || true)
    state=$(jq -r .state <<<"$SERVICE_DOC" 2>/dev/null || echo "?")
    [[ $state == running || $state == "?" ]] || return 0
    sleep "$interval"
  done
  return 1
}

# service_trials_per_s TRIALS: from the sweep's own clock (Redis time); fails
# unless every trial completed.
service_trials_per_s() {
  local done_n created finished state
  state=$(jq -r .state <<<"$SERVICE_DOC")
  done_n=$(jq '.counts.completed' <<<"$SERVICE_DOC")
  created=$(jq '.created_ms' <<<"$SERVICE_DOC")
  finished=$(jq '.finished_ms' <<<"$SERVICE_DOC")
  if [[ $state != finished || $done_n != "$1" ]]; then
    echo "sweep ended $state with $done_n of $1 completed" >&2
    return 1
  fi
  python3 -c "print(f'{$1 / (($finished - $created) / 1000):.1f}')"
}

# service_redis_cli ARGS...: redis-cli against the embedded Redis as its
# scheduler user (scheduler.json's URL is the workers' user, which may not run
# INFO); the password is in the data directory's 0600 redis.conf.
service_redis_cli() {
  local rest=${SERVICE_REDIS#redis://} hostport password
  hostport=${rest##*@}
  password=$(awk '$1 == "user" && $2 == "hpo-scheduler" {print substr($4, 2)}' \
    "$SERVICE_HOME/data/redis.conf")
  REDISCLI_AUTH=$password redis-cli --user hpo-scheduler -h "${hostport%:*}" \
    -p "${hostport##*:}" "$@"
}

# service_rate BUILD WORKERS SLOTS TRIALS CONCURRENT [WAIT_WORKERS (0)]: one
# sweep of TRIALS synthetic branin trials that do no work, on a fresh service
# (its clock starting once the workers registered when WAIT_WORKERS is 1);
# prints its trials/s.
service_rate() {
  service_start "$1" "$2" "$3" || return 1
  if [[ ${6:-0} == 1 ]]; then service_wait_workers "$2" || { service_stop; return 1; }; fi
  service_sweep "$4" "$5" branin || { service_stop; return 1; }
  service_wait || true
  local rate
  rate=$(service_trials_per_s "$4") || { service_stop; return 1; }
  service_stop
  echo "$rate"
}

# service_median: the median of the numbers on standard input, one a line.
service_median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

service_stop() {
  kill -TERM "${SERVICE_WORKERS[@]}" "$SERVICE_SCHEDULER" 2>/dev/null || true
  wait "${SERVICE_WORKERS[@]}" "$SERVICE_SCHEDULER" 2>/dev/null || true
  rm -rf "$SERVICE_HOME"
}
