#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test
# (unit, integration with a real redis-server, e2e with the real binaries,
# chaos, browser tests in headless Chromium), then the fuzzers (scripts/fuzz.sh:
# clang, ASan+UBSan, HPO_FUZZ_SECONDS each: 20 here, a smoke run that keeps CI
# short, from a build at -O0; scripts/fuzz.sh alone runs 60 s at -O1). Extra
# arguments go to ctest and skip the fuzzers, e.g.
#   scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/build.sh --tests
(
  cd "${HPO_BUILD_DIR:-build}"
  ctest --output-on-failure --timeout 600 -j2 "$@"
)
if (($# == 0)) && [[ "${HPO_FUZZ_SECONDS:-20}" != 0 ]]; then
  HPO_FUZZ_SECONDS=${HPO_FUZZ_SECONDS:-20} HPO_FUZZ_OPT=${HPO_FUZZ_OPT:--O0} scripts/fuzz.sh
fi
