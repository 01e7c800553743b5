#!/bin/sh
# The ensemble target run: one example sweep (search, then a bagged ensemble)
# end to end with the real binaries — hpo-scheduler with its embedded Redis, one
# local hpo-worker, `hpo submit --follow` — timed on the wall clock; then, in the
# same run, scikit-learn's RandomForestClassifier(n_estimators=100) on the same
# training images and the same official test set, for comparison.
# Not a test: prints figures.
#   tests/bench/ensemble_bench.sh [build-dir=build] [spec=examples/fashion_mnist_ensemble.json] [slots=2]
# NO_RF=1 skips the random forest (e.g. on a machine without python3-sklearn;
# scripts/install-deps.sh --bench installs it).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
spec=${2:-$root/examples/fashion_mnist_ensemble.json}
slots=${3:-2}
home=$(mktemp -d)
export HPO_HOME="$home"
pids=""
cleanup() {
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$home"
}
trap cleanup EXIT INT TERM

port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "$(date -u +%FT%TZ) spec=$(basename "$spec") slots=$slots cores=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
"$build/scheduler/hpo-scheduler" --listen "127.0.0.1:$port" >"$home/scheduler.log" 2>&1 &
pids="$!"
i=0
while [ ! -f "$home/scheduler.json" ]; do
  i=$((i + 1))
  [ "$i" -lt 300 ] || { echo "hpo-scheduler did not start"; cat "$home/scheduler.log"; exit 1; }
  sleep 0.1
done
"$build/workers/hpo-worker" --slots "$slots" >"$home/worker.log" 2>&1 &
pids="$pids $!"
status=0
"$build/cli/hpo" submit "$spec" --follow >"$home/follow.log" 2>&1 || status=$?
end=$(date +%s.%N)
id=$("$build/cli/hpo" --json status | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); s=d["sweeps"] if isinstance(d,dict) and "sweeps" in d else d; print(s[0]["id"])')
[ "$status" -eq 0 ] || { echo "the sweep did not complete (exit $status):"; tail -5 "$home/follow.log"; tail -20 "$home/scheduler.log"; exit 1; }
"$build/cli/hpo" --json trials "$id" --limit 1000 >"$home/trials.json"
"$build/cli/hpo" --json trials "$id" --kind member --limit 1000 >"$home/members.json"
curl -sf "http://127.0.0.1:$port/api/sweeps/$id/ensemble" >"$home/ensemble.json"
echo "sweep $id: wall clock end to end (submit to ensemble stored): $(echo "$end $start" | awk '{printf "%.0f s (%.1f min)", $1 - $2, ($1 - $2) / 60}')"
/usr/bin/python3 "$here/ensemble_report.py" "$home/trials.json" "$home/members.json" "$home/ensemble.json"

if [ -z "${NO_RF:-}" ]; then
  /usr/bin/python3 "$here/ensemble_rf_ref.py" "$spec"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
