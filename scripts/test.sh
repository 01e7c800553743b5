#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test
# (unit, integration with a real redis-server, e2e with the real binaries,
# chaos, browser tests in headless Chromium), then the fuzzers (scripts/fuzz.sh:
# clang, ASan+UBSan, HPO_FUZZ_SECONDS each: 20 here, to keep CI
# short; scripts/fuzz.sh alone runs 60). Extra arguments go
# to ctest and skip the fuzzers, e.g.
#   scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build=${HPO_BUILD_DIR:-build}
fuzz=0
if (($# == 0)) && [[ "${HPO_FUZZ_SECONDS:-20}" != 0 ]]; then fuzz=1; fi
if ((fuzz)); then
  # The fuzz build runs beside the tests, at the lowest priority: it takes
  # only the CPU they leave idle (many wait on real processes), and CI is
  # shorter by what it takes. Its own session, so that it can be stopped.
  HPO_FUZZ_BUILD_ONLY=1 setsid nice -n 19 scripts/fuzz.sh >"$build/fuzz-build.log" 2>&1 &
  fuzz_build=$!
fi
status=0
(
  cd "$build"
  ctest --output-on-failure --timeout 600 -j2 "$@"
) || status=$?
if ((fuzz)); then
  if ((status != 0)); then
    kill -- -"$fuzz_build" 2>/dev/null || true
    wait "$fuzz_build" 2>/dev/null || true
    exit $status
  fi
  if ! wait "$fuzz_build"; then
    tail -n 60 "$build/fuzz-build.log"
    echo "test: the fuzz build failed (log: $build/fuzz-build.log)"
    exit 1
  fi
  HPO_FUZZ_SECONDS=${HPO_FUZZ_SECONDS:-20} scripts/fuzz.sh
fi
exit $status
