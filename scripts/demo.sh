#!/usr/bin/env bash
# The main job, in one command, in two stages:
#   1. the first sweep: installs what the service needs (not LibTorch, not
#      npm), builds hpo-scheduler, hpo-worker and hpo, starts the scheduler
#      (with its embedded Redis) and one local worker, and runs
#      examples/python_sweep.json (a Python trial written with the hpo library);
#   2. the built-in LibTorch trainers and the dashboard: installs LibTorch and
#      the Fashion-MNIST files, builds the trainers and the dashboard (where
#      Node.js 20.19 or later is installed; else the demo goes on without it),
#      restarts the service on the new binaries (the first sweep stays in its
#      store) and runs examples/fashion_mnist_mlp.json.
# Each stage prints the time since the start; then it keeps serving until Ctrl-C.
#   scripts/demo.sh [SPEC.json]        stage 2 runs SPEC instead
#   HPO_DEMO_EXIT=1 scripts/demo.sh    stop once the last sweep has ended
#   HPO_DEMO_STAGES=1 scripts/demo.sh  the first stage only
set -euo pipefail
started=$(date +%s)
[[ -n ${HPO_HOME:-} && $HPO_HOME != /* ]] && HPO_HOME=$(pwd)/$HPO_HOME
cd "$(dirname "$0")/.."
root=$(pwd)
spec=${1:-examples/fashion_mnist_mlp.json}
stages=${HPO_DEMO_STAGES:-2}
[[ -f $spec ]] || { echo "demo.sh: no spec file '$spec' (from $root)" >&2; exit 2; }
[[ $# -gt 0 && $stages == 1 ]] && echo "demo.sh: HPO_DEMO_STAGES=1: $spec is not run"
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
trap stop_service EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Trials run as the user hpo-trial when the worker runs as root: they must be
# able to read their programs and the hpo library. A checkout in a private
# home (/root, 0700) is not readable by them: the demo then runs its trials
# from a world-readable copy of examples/ and python/ in /var/lib/hpo-demo.
trial_root=$root
stage_trial_files() {
  if [[ $(id -u) == 0 ]] &&
     ! runuser -u hpo-trial -- test -r "$root/examples/python/quadratic_trial.py" 2>/dev/null; then
    trial_root=/var/lib/hpo-demo
    rm -rf "$trial_root"
    mkdir -p "$trial_root"
    cp -r "$root/examples" "$root/python" "$trial_root/"
    chmod -R a+rX "$trial_root"
    echo "hpo: $root is not readable by the trials' user hpo-trial; they run from a copy in $trial_root"
  fi
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
  # From the trials' folder (the examples name their programs relative to it),
  # with the hpo library from there too (wherever the build is).
  (cd "$trial_root" && exec "$bin/workers/hpo-worker" --slots 2 --python-lib "$trial_root/python") \
    >>"$HPO_HOME/worker.log" 2>&1 &
  pids+=($!)
  api=$(sed -n 's/.*"api": "\(.*\)".*/\1/p' "$HPO_HOME/scheduler.json")
  token=$(sed -n 's/.*"token": "\(.*\)".*/\1/p' "$HPO_HOME/scheduler.json")
  echo "hpo: scheduler at $api (logs in $HPO_HOME), one worker with 2 slots"
}

status=0
run_sweep() {  # SPEC WHAT
  echo "hpo: submitting $1"
  "$bin/cli/hpo" submit "$1" --follow || status=$?
  echo
  echo "hpo: $2 ended $(since) after scripts/demo.sh started"
}

# Stage 1: the service and a Python sweep. A build that has the LibTorch
# trainers already (a second run) keeps them: switching them off would
# rebuild the worker twice.
no_torch=(--no-torch)
grep -qs '^HPO_WITH_TORCH:BOOL=ON' "$bin/CMakeCache.txt" && no_torch=()
scripts/install-deps.sh "${no_torch[@]}"
HPO_BUILD_DIR=$bin scripts/build.sh "${no_torch[@]}" --no-ui
echo "hpo: the service installed and built in $(since)"
stage_trial_files
start_service
run_sweep examples/python_sweep.json "the first sweep (a Python trial with the hpo library)"
if [[ $stages != 1 ]]; then
  # Stage 2: the LibTorch trainers and the dashboard; the service restarts on the new binaries.
  scripts/install-deps.sh
  HPO_BUILD_DIR=$bin scripts/build.sh --no-ui
  scripts/build-ui.sh || echo "hpo: no dashboard (above: why); the API and the CLI work without it"
  echo "hpo: the LibTorch trainers and the dashboard installed and built $(since) after the start"
  stop_service
  start_service
  run_sweep "$spec" "the sweep of $spec"
fi
if [[ -f web/ui/dist/index.html ]]; then
  echo "Dashboard: $api/    API: $api/api/sweeps"
else
  echo "API: $api/api/sweeps    (no dashboard: scripts/build-ui.sh says what it needs)"
fi
echo "API token (for submitting and cancelling from the dashboard or with curl): $token"
echo "CLI: $bin/cli/hpo status    (HPO_HOME=$HPO_HOME)"
if [[ "${HPO_DEMO_EXIT:-0}" == "1" ]]; then
  exit $status
fi
echo "Serving until Ctrl-C."
wait
