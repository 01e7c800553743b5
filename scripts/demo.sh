#!/usr/bin/env bash
# The main job, in one command: installs what is missing, builds the product
# (not the tests), starts hpo-scheduler (with its embedded Redis) and one local
# hpo-worker, submits an example sweep, follows it to the end, prints the best
# trial, the time since the start and where the dashboard is, then keeps
# serving until Ctrl-C.
#   scripts/demo.sh [SPEC.json]      (default: examples/fashion_mnist_mlp.json)
#   HPO_DEMO_EXIT=1 scripts/demo.sh  stop once the sweep has ended
set -euo pipefail
started=$(date +%s)
cd "$(dirname "$0")/.."
root=$(pwd)
spec=${1:-examples/fashion_mnist_mlp.json}
scripts/install-deps.sh  # what building and running needs; the tests' packages are test.sh's
scripts/build.sh         # the product only; test.sh builds the tests
echo "hpo: installed and built in $(($(date +%s) - started)) s"
bin=${HPO_BUILD_DIR:-build}
export HPO_HOME=${HPO_HOME:-$root/.hpo}
listen=${HPO_LISTEN:-127.0.0.1:8080}
mkdir -p "$HPO_HOME"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

rm -f "$HPO_HOME/scheduler.json"
"$bin/scheduler/hpo-scheduler" --listen "$listen" >"$HPO_HOME/scheduler.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  [[ -f "$HPO_HOME/scheduler.json" ]] && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "hpo-scheduler did not start:"; cat "$HPO_HOME/scheduler.log"; exit 1
  fi
  sleep 0.1
done
[[ -f "$HPO_HOME/scheduler.json" ]] || { echo "hpo-scheduler did not start in 30 s"; cat "$HPO_HOME/scheduler.log"; exit 1; }
"$bin/workers/hpo-worker" --slots 2 >"$HPO_HOME/worker.log" 2>&1 &
pids+=($!)

api=$(sed -n 's/.*"api": "\(.*\)".*/\1/p' "$HPO_HOME/scheduler.json")
token=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' "$HPO_HOME/scheduler.json")
echo "hpo: scheduler at $api (logs in $HPO_HOME), one worker with 2 slots"
echo "hpo: submitting $spec"
status=0
"$bin/cli/hpo" submit "$spec" --follow || status=$?
echo
echo "hpo: the sweep ended $(($(date +%s) - started)) s after scripts/demo.sh started (installs, build and sweep)"
echo "Dashboard: $api/    API: $api/api/sweeps"
echo "API token (for submitting and cancelling from the dashboard or with curl): $token"
echo "CLI: $bin/cli/hpo status    (HPO_HOME=$HPO_HOME)"
if [[ "${HPO_DEMO_EXIT:-0}" == "1" ]]; then
  exit $status
fi
echo "Serving until Ctrl-C."
wait
