#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test
# (unit, integration with a real redis-server, e2e with the real binaries,
# browser tests in headless Chromium). Extra arguments go to ctest, e.g.
#   scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${HPO_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j2 "$@"
