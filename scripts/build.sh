#!/usr/bin/env bash
# Configures and builds hpo into build/ (and the dashboard into web/ui/dist).
# Idempotent: a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HPO_BUILD_DIR:-build}
jobs=$(nproc)
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" -j"$jobs"
if [[ -f web/ui/package.json ]]; then
  scripts/build-ui.sh
fi
