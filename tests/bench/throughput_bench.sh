#!/usr/bin/env bash
# Throughput of many cheap trials, end to end, beside Optuna (issue 13): the
# real hpo-scheduler (embedded Redis, AOF appendfsync always) and W workers of
# S slots run a sweep of N `synthetic` `noop` trials (random sampler); then
# Optuna's JournalRedisStorage with P processes runs the same N trials
# (throughput_optuna.py: its own redis-server, appendfsync always). Prints
# trials/s of both and their ratio, and for hpo: Redis commands per trial
# (FCALLs and the commands run inside them), fsyncs per trial (Redis's
# fdatasync calls, counted by `perf stat` on the syscall tracepoint when perf
# may trace; else n/a), the scheduler's and the workers' CPU time per trial,
# and the p50/p99 of claim-to-complete (a trial's started_ms to finished_ms,
# Redis time).
#
#   tests/bench/throughput_bench.sh [build] [trials] [workers] [slots] [concurrent] [optuna-processes]
#   defaults: build 5000 2 16 64 2
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
trials=${2:-5000}
workers=${3:-2}
slots=${4:-16}
concurrent=${5:-64}
processes=${6:-2}
source tests/bench/service.sh

cpu_ticks() {  # utime + stime of a pid, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}
redis_commands() {
  service_redis_cli INFO stats | awk -F: '/^total_commands_processed/ {print $2+0}'
}

echo "throughput_bench $(date -u '+%F %H:%M') UTC on $(nproc) cores, $(git rev-parse --short HEAD):" \
  "$trials synthetic noop trials, $workers workers x $slots slots, max_concurrent $concurrent"
service_start "$build" "$workers" "$slots"
trap service_stop EXIT
service_wait_workers "$workers"  # every worker registered before the clock starts
redis_pid=$(pgrep -P "$SERVICE_SCHEDULER" -x redis-server | head -1 || true)
fsyncs_file=$SERVICE_HOME/fsyncs.txt
if [[ -n $redis_pid ]] && command -v perf >/dev/null &&
  perf stat -e syscalls:sys_enter_fdatasync -p "$redis_pid" -- true >/dev/null 2>&1; then
  perf stat -x, -e syscalls:sys_enter_fdatasync -p "$redis_pid" -o "$fsyncs_file" &
  perf_pid=$!
fi
cmds0=$(redis_commands)
redis0=$(cpu_ticks "${redis_pid:-0}")
sched0=$(cpu_ticks "$SERVICE_SCHEDULER")
work0=0
for w in "${SERVICE_WORKERS[@]}"; do work0=$((work0 + $(cpu_ticks "$w"))); done
service_sweep "$trials" "$concurrent"
service_wait
cmds1=$(redis_commands)
redis1=$(cpu_ticks "${redis_pid:-0}")
fsyncs=n/a
if [[ -n ${perf_pid:-} ]]; then
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  fsyncs=$(awk -F, '/fdatasync/ {print $1}' "$fsyncs_file")
fi
sched1=$(cpu_ticks "$SERVICE_SCHEDULER")
work1=0
for w in "${SERVICE_WORKERS[@]}"; do work1=$((work1 + $(cpu_ticks "$w"))); done
hpo_rate=$(service_trials_per_s "$trials")
# Claim-to-complete of every trial, from the trial pages (1,000 a page).
times=$(for ((off = 0; off < trials; off += 1000)); do
  curl -sf "$SERVICE_API/api/sweeps/$SERVICE_SWEEP/trials?offset=$off&limit=1000" |
    jq -r '.trials[] | "\(.started_ms) \(.finished_ms)"'
done)
latencies=$(awk '{print $2 - $1}' <<<"$times" | sort -n)
# The sweep's clock from submit to end: until the first trial starts, the
# trials, and from the last trial's end to the sweep's.
created_ms=$(jq '.created_ms' <<<"$SERVICE_DOC")
ended_ms=$(jq '.finished_ms' <<<"$SERVICE_DOC")
read -r first_start last_end < <(awk 'NR == 1 {a = $1; b = $2} {if ($1 < a) a = $1; if ($2 > b) b = $2} END {print a, b}' <<<"$times")
echo "timeline: submit -> first start $((first_start - created_ms)) ms, trials $((last_end - first_start)) ms," \
  "last trial -> sweep finished $((ended_ms - last_end)) ms"
pct() { awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100); if (i<1) i=1; print a[i]}' <<<"$latencies"; }
ticks=$(getconf CLK_TCK)
python3 - "$trials" "$hpo_rate" "$cmds0" "$cmds1" "$sched0" "$sched1" "$work0" "$work1" "$ticks" \
  "$(pct 50)" "$(pct 99)" "$fsyncs" "$redis0" "$redis1" <<'EOF'
import sys
n, rate, c0, c1, s0, s1, w0, w1, hz, p50, p99, fsyncs, r0, r1 = sys.argv[1:]
n = int(n)
fs = f"{int(fsyncs) / n:.2f}" if fsyncs.isdigit() else "n/a"
print(f"hpo:    {float(rate):8.1f} trials/s  {(int(c1) - int(c0)) / n:5.1f} Redis commands/trial  "
      f"{fs} fsyncs/trial  "
      f"scheduler {1000 * (int(s1) - int(s0)) / int(hz) / n:.3f} ms CPU/trial  "
      f"workers {1000 * (int(w1) - int(w0)) / int(hz) / n:.3f} ms CPU/trial  "
      f"redis {1000 * (int(r1) - int(r0)) / int(hz) / n:.3f} ms CPU/trial  "
      f"claim-to-complete p50 {p50} ms p99 {p99} ms")
EOF
service_stop
trap - EXIT
optuna_rate=$(/usr/bin/python3 tests/bench/throughput_optuna.py "$trials" "$processes")
echo "optuna: $(printf '%8.1f' "$optuna_rate") trials/s  (JournalRedisStorage, $processes processes, random sampler)"
python3 -c "print(f'ratio hpo / optuna: {$hpo_rate / $optuna_rate:.2f}')"
