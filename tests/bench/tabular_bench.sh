#!/usr/bin/env bash
# The tabular ensemble benchmark (issue 15): 12 synthetic tabular data sets
# (examples/sklearn/make_data.py), each an hpo sweep of the scikit-learn command
# trial through the real service (hpo-scheduler with its embedded Redis, one
# hpo-worker with 2 slots), then the ensemble stage; against scikit-learn's
# RandomForest(300) and HistGradientBoosting on the same split, same run.
# Not a test: prints the table (tabular_bench.py says what the columns are).
#   tests/bench/tabular_bench.sh [build-dir=build] [DATASET ...]
# Needs python3-sklearn (scripts/install-deps.sh --bench). TRIALS=16 MEMBERS=6.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
shift || true
source "$here/service.sh"
trap service_stop EXIT
echo "$(date -u +%FT%TZ) cores=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)"
service_start "$build" 1 2
# BENCH_PY: another driver over the same service (incumbent_bench.sh's).
/usr/bin/python3 "$here/${BENCH_PY:-tabular_bench.py}" "$SERVICE_API" "$SERVICE_TOKEN" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
