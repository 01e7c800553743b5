#!/usr/bin/env bash
# The main job, in one command, in two stages:
#   1. the first sweep: installs what the service needs (not LibTorch), builds
#      hpo-scheduler, hpo-worker and hpo, starts the scheduler (with its
#      embedded Redis) and one local worker, and runs examples/python_sweep.json
#      (a Python trial written with the hpo library); the dashboard is built
#      beside the C++ build where npm is already installed;
#   2. the built-in LibTorch trainers: installs LibTorch and the Fashion-MNIST
#      files, builds the trainers (and the dashboard if stage 1 could not),
#      restarts the service on the new binaries (the first sweep stays in its
#      store) and runs examples/fashion_mnist_mlp.json.
# Each stage prints the time since the start; then it keeps serving until Ctrl-C.
#   scripts/demo.sh [SPEC.json]      stage 2 runs SPEC instead
#   HPO_DEMO_EXIT=1 scripts/demo.sh  stop once the last sweep has ended
#   HPO_DEMO_STAGES=1 scripts/demo.sh  only the first stage
set -euo pipefail
started=$(date +%s)
cd "$(dirname "$0")/.."
root=$(pwd)
spec=${1:-examples/fashion_mnist_mlp.json}
bin=${HPO_BUILD_DIR:-build}
[[ $bin == /* ]] || bin=$root/$bin
export HPO_HOME=${HPO_HOME:-$root/.hpo}
listen=${HPO_LISTEN:-127.0.0.1:8080}
mkdir -p "$HPO_HOME"
since() { echo "$(($(date +%s) - started)) s"; }

pids=()
stop_service() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
ui_pid=""
cleanup() {
  [[ -n $ui_pid ]] && kill -TERM "$ui_pid" 2>/dev/null
  stop_service
}
trap cleanup EXIT INT TERM

# Trials run as the user hpo-trial when the worker runs as root: they must be
# able to read their programs and the hpo library. A checkout in a private
# home (/root, 0700) is not readable by them: the demo then runs its trials
# from a world-readable copy of examples/ and python/ in /var/lib/hpo/demo.
trial_root=$root
python_lib=()
stage_trial_files() {
  [[ $(id -u) == 0 ]] || return 0
  runuser -u hpo-trial -- test -r "$root/examples/python/quadratic_trial.py" 2>/dev/null && return 0
  trial_root=/var/lib/hpo/demo
  rm -rf "$trial_root"
  mkdir -p "$trial_root"
  chmod 0755 /var/lib/hpo "$trial_root"
  cp -r "$root/examples" "$root/python" "$trial_root/"
  chmod -R go+rX "$trial_root"
  python_lib=(--python-lib "$trial_root/python")
  echo "hpo: $root is not readable by the trials' user hpo-trial; they run from a copy in $trial_root"
}

start_service() {
  rm -f "$HPO_HOME/scheduler.json"
  "$bin/scheduler/hpo-scheduler" --listen "$listen" >>"$HPO_HOME/scheduler.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do
    [[ -f "$HPO_HOME/scheduler.json" ]] && break
    if ! kill -0 "${pids[0]}" 2>/dev/null; then
      echo "hpo-scheduler did not start:"; cat "$HPO_HOME/scheduler.log"; exit 1
    fi
    sleep 0.1
  done
  [[ -f "$HPO_HOME/scheduler.json" ]] ||
    { echo "hpo-scheduler did not start in 30 s"; cat "$HPO_HOME/scheduler.log"; exit 1; }
  (cd "$trial_root" && exec "$bin/workers/hpo-worker" --slots 2 "${python_lib[@]}") \
    >>"$HPO_HOME/worker.log" 2>&1 &
  pids+=($!)
  api=$(sed -n 's/.*"api": "\(.*\)".*/\1/p' "$HPO_HOME/scheduler.json")
  token=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' "$HPO_HOME/scheduler.json")
  echo "hpo: scheduler at $api (logs in $HPO_HOME), one worker with 2 slots"
}

run_sweep() {  # SPEC WHAT
  echo "hpo: submitting $1"
  "$bin/cli/hpo" submit "$1" --follow || status=$?
  echo
  echo "hpo: $2 ended $(since) after scripts/demo.sh started"
}

status=0
# Stage 1: the service and a Python sweep. The dashboard builds beside the
# C++ build where npm is there already, at the lowest priority: mostly npm's
# downloads, and its compile takes the cores only when the C++ build leaves one idle.
scripts/install-deps.sh --no-torch --no-ui
if command -v npm >/dev/null 2>&1 && [[ -f web/ui/package.json ]]; then
  nice -n 19 scripts/build-ui.sh >"$HPO_HOME/build-ui.log" 2>&1 &
  ui_pid=$!
fi
scripts/build.sh --no-torch --no-ui
ui_built=0
if [[ -n $ui_pid ]]; then
  wait "$ui_pid" && ui_built=1 || echo "hpo: the dashboard did not build (see $HPO_HOME/build-ui.log); stage 2 tries again"
  ui_pid=""
fi
echo "hpo: the service installed and built in $(since)"
stage_trial_files
start_service
run_sweep examples/python_sweep.json "the first sweep (a Python trial with the hpo library)"
if [[ "${HPO_DEMO_STAGES:-2}" != 1 ]]; then
  # Stage 2: the LibTorch trainers; the service restarts on the new binaries.
  scripts/install-deps.sh
  if ((ui_built)); then scripts/build.sh --no-ui; else scripts/build.sh; fi
  echo "hpo: the LibTorch trainers installed and built $(since) after the start"
  stop_service
  start_service
  run_sweep "$spec" "the sweep of $spec"
fi
echo "Dashboard: $api/    API: $api/api/sweeps"
echo "API token (for submitting and cancelling from the dashboard or with curl): $token"
echo "CLI: $bin/cli/hpo status    (HPO_HOME=$HPO_HOME)"
if [[ "${HPO_DEMO_EXIT:-0}" == "1" ]]; then
  exit $status
fi
echo "Serving until Ctrl-C."
wait
