#!/usr/bin/env bash
# A real-sized checkpoint through the real service (issue 39): a command trial
# keeps one file of SIZE GiB in HPO_CHECKPOINT_DIR and prints hpo-checkpoint;
# the worker streams it to the scheduler's --artifacts folder; the worker is
# drained, and a second worker restores it for the next attempt. Against the
# reference on the same disk, in the same run: `cp` of the same file followed
# by `sync` of the copy (the store fsyncs what it writes). Prints store and
# restore throughput (from the worker's own log lines, which time the store
# call and the restore), their ratios to cp, and the peak RSS (VmHWM) of the
# workers and the scheduler above their idle figure.
#
#   tests/bench/artifact_bench.sh [build] [GiB]   (defaults: build 4)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
gib=${2:-4}
source tests/bench/service.sh
service_banner
echo "artifact_bench $(git rev-parse --short HEAD): one file of $gib GiB, --artifacts on $(df --output=source /tmp | tail -1)"

work=$(mktemp -d /tmp/hpo-artifact-bench.XXXXXX)
trap 'service_stop 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/artifacts"
head -c "$((gib << 30))" /dev/urandom >"$work/weights.bin"
bytes=$(stat -c %s "$work/weights.bin")

t0=$(date +%s.%N)
cp "$work/weights.bin" "$work/copy.bin"
sync "$work/copy.bin"
t1=$(date +%s.%N)
rm -f "$work/copy.bin"
cp_mbs=$(echo "$bytes / ($t1 - $t0) / 1000000" | bc -l)

# The trial links the prepared file in (the same file system): its own time is nil.
cat >"$work/trial.sh" <<TRIAL
#!/bin/sh
ck="\$HPO_CHECKPOINT_DIR"
if [ -f "\$ck/weights.bin" ]; then
  echo "hpo-metric {\"final\": true, \"resumed\": \$(stat -c %s "\$ck/weights.bin")}"
  exit 0
fi
ln "$work/weights.bin" "\$ck/weights.bin"
echo hpo-checkpoint
echo 'hpo-metric {"step": 0, "resumed": 0}'
while :; do sleep 0.2; done
TRIAL
chmod 0755 "$work/trial.sh"
spec=$(jq -nc --arg p "$work/trial.sh" '{
  name: "artifact bench", objective: {metric: "resumed", mode: "max"},
  parameters: {x: {type: "categorical", values: [1]}},
  search: {algorithm: "grid", max_trials: 1},
  trial: {kind: "command", argv: [$p], max_attempts: 2, timeout_s: 3600}}')

hwm() { awk '/^VmHWM:/ {print $2 * 1024}' "/proc/$1/status"; }
SERVICE_SCHEDULER_ARGS="--artifacts $work/artifacts" \
  SERVICE_WORKER_ARGS="--trial-user none --any-project-as-worker --drain-grace-s 0" service_start "$build" 1 1
for _ in $(seq 300); do
  (($(curl -sf "$SERVICE_API/api/workers" | jq '.workers | length' 2>/dev/null || echo 0) >= 1)) && break
  sleep 0.1
done
idle_worker=$(hwm "${SERVICE_WORKERS[0]}")
idle_scheduler=$(hwm "$SERVICE_SCHEDULER")
service_submit "$spec"
trial="$SERVICE_SWEEP-0"
auth=(-H "Authorization: Bearer $SERVICE_TOKEN")
for _ in $(seq 36000); do
  (($(curl -sf "${auth[@]}" "$SERVICE_API/api/trials/$trial" | jq '.reports | length') > 0)) && break
  sleep 0.1
done
store_worker=$(hwm "${SERVICE_WORKERS[0]}")
kill -TERM "${SERVICE_WORKERS[0]}"
wait "${SERVICE_WORKERS[0]}" || true
# The released attempt's log: "[hpo] checkpoint stored: 1 files, B bytes in S s".
logs=$(curl -sf "${auth[@]}" "$SERVICE_API/api/trials/$trial" | jq -r '.log_tail // ""')
# shellcheck disable=SC2086
HPO_HOME=$SERVICE_HOME "$build/workers/hpo-worker" --slots 1 --name bench-2 --trial-user none --any-project-as-worker \
  >"$SERVICE_HOME/worker-2.log" 2>&1 &
SERVICE_WORKERS=($!)
service_wait 0.2
[[ $(jq -r .state <<<"$SERVICE_DOC") == finished ]] || { echo "sweep did not finish" >&2; exit 1; }
restore_worker=$(hwm "${SERVICE_WORKERS[0]}")
scheduler_peak=$(hwm "$SERVICE_SCHEDULER")
detail=$(curl -sf "${auth[@]}" "$SERVICE_API/api/trials/$trial")
[[ $(jq .metrics.resumed <<<"$detail") == "$bytes" ]] || { echo "not resumed whole: $detail" >&2; exit 1; }
# The resumed attempt's: "[hpo] resuming: ... (B bytes in S s)".
logs+=$'\n'$(jq -r '.log_tail // ""' <<<"$detail")
store_s=$(grep -o 'checkpoint stored: [0-9]* files, [0-9]* bytes in [0-9.]* s' <<<"$logs" | head -1 | awk '{print $(NF-1)}')
restore_s=$(grep -o 'HPO_CHECKPOINT_DIR ([0-9]* bytes in [0-9.]* s)' <<<"$logs" | head -1 | awk '{print $(NF-1)}')
[[ -n $store_s && -n $restore_s ]] || { echo "no timing lines in the trial's log: $logs" >&2; exit 1; }
store_mbs=$(echo "$bytes / $store_s / 1000000" | bc -l)
restore_mbs=$(echo "$bytes / $restore_s / 1000000" | bc -l)
printf '%-36s %10s %8s\n' "" "MB/s" "vs cp"
printf '%-36s %10.0f %8s\n' "cp + sync (reference)" "$cp_mbs" "1.00"
printf '%-36s %10.0f %8.2f\n' "store (worker -> --artifacts)" "$store_mbs" "$(echo "$store_mbs / $cp_mbs" | bc -l)"
printf '%-36s %10.0f %8.2f\n' "restore (--artifacts -> attempt)" "$restore_mbs" "$(echo "$restore_mbs / $cp_mbs" | bc -l)"
mib() { echo "($1) / 1048576" | bc -l; }
printf 'peak RSS above idle: worker storing %.0f MiB, worker restoring %.0f MiB, scheduler %.0f MiB (idle: worker %.0f MiB, scheduler %.0f MiB)\n' \
  "$(mib "$store_worker - $idle_worker")" "$(mib "$restore_worker - $idle_worker")" \
  "$(mib "$scheduler_peak - $idle_scheduler")" "$(mib "$idle_worker")" "$(mib "$idle_scheduler")"
