#!/usr/bin/env bash
# What the trust boundary costs, through the real service (issues 38, 57): the
# same sweeps on a root worker whose trials run as users of their own in cgroups
# and namespaces of their own (the default), on one without the namespaces
# (--trial-namespaces off), and on one that runs them as itself with neither
# (--trial-user none --trial-cgroups none --trial-namespaces off, the
# reference), in the same run.
#   command: N trials of a program that prints one metric (the spawn, user
#            switch, attempt folder hand-over, cgroup and namespaces per trial):
#            trials/s.
#   torch:   M one-epoch mlp trials on 12,000 Fashion-MNIST images (the ranks
#            then decode the data themselves: the worker's dataset cache is
#            not theirs to read): mean seconds per trial, started to finished.
#
#   tests/bench/trust_bench.sh [build] [command-trials] [torch-trials]   (defaults: build 200 4)
# Needs root (the user switch, cgroups) and the user hpo-trial (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
command_trials=${2:-200}
torch_trials=${3:-4}
source tests/bench/service.sh
[[ $(id -u) -eq 0 ]] || { echo "trust_bench: needs root (trial users, cgroups)" >&2; exit 2; }
service_banner
echo "trust_bench $(git rev-parse --short HEAD): $command_trials command trials, $torch_trials torch trials, 1 worker x 2 slots"

# A program every trial user can run, outside any private folder.
prog_dir=$(mktemp -d /tmp/hpo-trust-bench.XXXXXX)
chmod 0755 "$prog_dir"
printf '#!/bin/sh\necho "hpo-metric {\\"final\\": true, \\"value\\": $1}"\n' >"$prog_dir/trial.sh"
chmod 0755 "$prog_dir/trial.sh"
# And the rank program (a build inside a private clone may not be reachable).
cp "$build/workers/hpo-train-rank" "$prog_dir/" && chmod 0755 "$prog_dir/hpo-train-rank"
trap 'service_stop 2>/dev/null; rm -rf "$prog_dir"' EXIT

command_spec=$(jq -nc --argjson n "$command_trials" --arg p "$prog_dir/trial.sh" '{
  name: "trust bench command", objective: {metric: "value", mode: "min"},
  parameters: {x: {type: "float", min: 0, max: 1}},
  search: {algorithm: "random", max_trials: $n, max_concurrent: 4, seed: 1},
  trial: {kind: "command", argv: [$p, "{x}"], timeout_s: 60}}')
torch_spec=$(jq -nc --argjson n "$torch_trials" --argjson data "$(jq -nc "$SERVICE_FASHION_MNIST")" '{
  name: "trust bench torch", objective: {metric: "val_accuracy", mode: "max"},
  parameters: {lr: {type: "float", min: 0.001, max: 0.01, log: true}},
  search: {algorithm: "random", max_trials: $n, max_concurrent: 2, seed: 1},
  trial: {kind: "torch", task: "classification", model: {type: "mlp", hidden: 128, depth: 1},
          data: $data, optimizer: {type: "adam", lr: "{lr}"}, batch_size: 128, epochs: 1,
          timeout_s: 600}}')

# run LABEL WORKER_ARGS: prints "LABEL command_trials_per_s torch_s_per_trial"
run() {
  SERVICE_WORKER_ARGS=$2 HPO_TRAIN_RANK=$prog_dir/hpo-train-rank service_start "$build" 1 2
  for _ in $(seq 300); do
    (($(curl -sf "$SERVICE_API/api/workers" | jq '.workers | length' 2>/dev/null || echo 0) >= 1)) && break
    sleep 0.1
  done
  local t0 t1 rate secs
  service_submit "$command_spec"
  t0=$(date +%s.%N)
  service_wait 0.05
  t1=$(date +%s.%N)
  [[ $(jq -r .state <<<"$SERVICE_DOC") == finished ]] || { echo "$1: command sweep not finished" >&2; return 1; }
  rate=$(echo "$command_trials / ($t1 - $t0)" | bc -l)
  service_submit "$torch_spec"
  secs=$(service_finished_trials torch 1 1 | jq '[.trials[] | (.finished_ms - .started_ms) / 1000] | add / length')
  grep -h "trial sandbox\|not fully isolated\|torch trials run as" "$SERVICE_HOME"/worker-1.log | head -2 >&2
  service_stop
  printf '%-34s %8.1f %10.2f\n' "$1" "$rate" "$secs"
}

printf '%-34s %8s %10s\n' "worker" "cmd/s" "torch s/trial"
confined=$(run "users + cgroups + namespaces (default)" "")
boxed=$(run "users + cgroups, no namespaces" "--trial-namespaces off")
plain=$(run "as the worker, no cgroup" \
  "--trial-user none --any-project-as-worker --trial-cgroups none --trial-namespaces off")
echo "$confined"
echo "$boxed"
echo "$plain"
ratio() {
  awk -v a="$2" -v b="$3" -v l="$1" 'BEGIN {
    n = split(a, x, " "); m = split(b, y, " ");
    printf "ratio (%s): command trials/s %.2f, torch s/trial %.2f\n", l, x[n-1] / y[m-1], x[n] / y[m] }'
}
ratio "default / reference" "$confined" "$plain"
ratio "namespaces / none" "$confined" "$boxed"
