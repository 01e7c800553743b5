#!/usr/bin/env bash
# Load on the real service: 1,000 concurrent clients (900 readers, 50 event
# streams, 50 submitters) against hpo-scheduler + one hpo-worker for 60 s.
#   tests/bench/web_load_bench.sh [build-dir] [seconds] [readers] [streams] [submitters]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
shift || true
cmake --build "$build" --target web_load_bench hpo-scheduler hpo-worker -j"$(nproc)" >/dev/null
echo "web_load_bench $(date -u +%F) on $(nproc) cores, $(git rev-parse --short HEAD)"
exec "$build/tests/bench/web_load_bench" "$@"
