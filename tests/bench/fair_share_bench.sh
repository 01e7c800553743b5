#!/usr/bin/env bash
# Weighted fair share through the real service (issue 42): projects of weight
# 1 and 3 on one saturated pool (hpo-scheduler with its embedded Redis, W
# workers of S slots), each with a sweep of many `synthetic` `noop` trials of
# SLEEP seconds whose max_concurrent exceeds the pool, so both always have
# ready work. Prints each project's slot-time while both ran (from the
# trials' own start and end times, Redis time) and the ratio, which should be
# 3 within 10 %; then a third project alone on the pool (idle share is lent:
# it should hold every slot).
#
#   tests/bench/fair_share_bench.sh [build] [seconds] [workers] [slots] [sleep]
#                                   (defaults: build 60 2 4 0.5)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
seconds=${2:-60}
workers=${3:-2}
slots=${4:-4}
sleep_s=${5:-0.5}
source tests/bench/service.sh
service_banner
pool=$((workers * slots))
# Enough trials that neither sweep ends before `seconds` have passed.
per_s=$(python3 -c "print(int($pool / $sleep_s) + 1)")
n_one=$((per_s * seconds / 2))
n_three=$((per_s * seconds))
echo "fair_share_bench $(git rev-parse --short HEAD): $workers workers x $slots slots, noop trials of ${sleep_s} s, ${seconds} s"
trap 'service_stop 2>/dev/null' EXIT
service_start "$build" "$workers" "$slots"

api() { curl -sf -H "Authorization: Bearer $SERVICE_TOKEN" -H 'Content-Type: application/json' "$@"; }
for p in one:1 three:3 alone:1; do
  api -d "{\"name\": \"${p%%:*}\", \"weight\": ${p##*:}}" "$SERVICE_API/api/projects" >/dev/null
done
spec() {  # TRIALS
  jq -nc --argjson n "$1" --argjson c "$((4 * pool))" --argjson s "$sleep_s" '{
    name: "share", objective: {metric: "value", mode: "min"},
    parameters: {x1: {type: "float", min: -5, max: 10}, x2: {type: "float", min: 0, max: 15}},
    search: {algorithm: "random", max_trials: $n, max_concurrent: $c, seed: 1},
    trial: {kind: "synthetic", function: "noop", sleep_s: $s}}'
}
one=$(api -d "$(spec "$n_one")" "$SERVICE_API/api/sweeps?project=one" | jq -r .id)
three=$(api -d "$(spec "$n_three")" "$SERVICE_API/api/sweeps?project=three" | jq -r .id)
sleep "$seconds"
api -X POST "$SERVICE_API/api/sweeps/$one/cancel" >/dev/null
api -X POST "$SERVICE_API/api/sweeps/$three/cancel" >/dev/null

trials() {  # SWEEP: every trial that started, one JSON array
  local offset page
  for ((offset = 0; ; offset += 1000)); do
    page=$(api "$SERVICE_API/api/sweeps/$1/trials?limit=1000&offset=$offset" | jq -c .trials)
    printf '%s\n' "$page"
    (($(jq length <<<"$page") == 1000)) || break
  done | jq -sc 'add | map(select(.started_ms > 0))'
}
trials "$one" >"$SERVICE_HOME/one.json"
trials "$three" >"$SERVICE_HOME/three.json"
/usr/bin/python3 - "$SERVICE_HOME" "$pool" <<'PY'
import json, sys
home, pool = sys.argv[1], int(sys.argv[2])
runs = {p: json.load(open(f"{home}/{p}.json")) for p in ("one", "three")}
def end(t):  # a trial cancelled while running ends when it was stopped
    return t["finished_ms"] or max(u["started_ms"] for r in runs.values() for u in r)
# The window in which both projects had trials: from the later first start to
# the earlier last start (both kept the pool full until cancelled).
lo = max(min(t["started_ms"] for t in r) for r in runs.values())
hi = min(max(t["started_ms"] for t in r) for r in runs.values())
slot_s = {p: sum(max(0, min(end(t), hi) - max(t["started_ms"], lo)) * t["slots"] for t in r) / 1000
          for p, r in runs.items()}
span = (hi - lo) / 1000
for p, w in (("one", 1), ("three", 3)):
    print(f"  project {p:<6} weight {w}: {slot_s[p]:8.1f} slot-s, {slot_s[p] / span:4.2f} slots on average"
          f" ({100 * slot_s[p] / (pool * span):.1f} % of the pool)")
ratio = slot_s["three"] / slot_s["one"]
print(f"  window {span:.1f} s; slot-time ratio three/one {ratio:.3f} (weights 3/1; within 10 %: "
      f"{'yes' if abs(ratio - 3) <= 0.3 else 'NO'})")
PY
alone=$(api -d "$(spec $((per_s * 30)))" "$SERVICE_API/api/sweeps?project=alone" | jq -r .id)
most=0
for _ in $(seq 50); do
  held=$(api "$SERVICE_API/api/projects" | jq '.projects[] | select(.name == "alone") | .use.slots')
  ((held > most)) && most=$held
  sleep 0.2
done
api -X POST "$SERVICE_API/api/sweeps/$alone/cancel" >/dev/null || true
echo "  a project alone on the pool held at most $most of $pool slots"
