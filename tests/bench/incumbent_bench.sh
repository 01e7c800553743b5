#!/usr/bin/env bash
# The ensemble stage's incumbent on small tabular data sets (issue 41): several
# splits of each, one sweep per split through the real service (tabular_bench.sh's:
# hpo-scheduler with its embedded Redis, one hpo-worker with 2 slots); the
# chosen model against the sweep's best trial on the test rows. Not a test:
# prints the table (incumbent_bench.py says what the columns are).
#   tests/bench/incumbent_bench.sh [build-dir=build] [--splits K] [--objective val_loss|val_accuracy] [DATASET ...]
# Needs python3-sklearn (scripts/install-deps.sh --bench). TRIALS=16 MEMBERS=6.
here=$(cd "$(dirname "$0")" && pwd)
BENCH_PY=incumbent_bench.py exec "$here/tabular_bench.sh" "$@"
