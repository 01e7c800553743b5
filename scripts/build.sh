#!/usr/bin/env bash
# Configures and builds hpo into build/ (and the dashboard into web/ui/dist).
# Idempotent: a second run rebuilds only what changed.
#   scripts/build.sh            the product: hpo-scheduler, hpo-worker (with
#                               hpo-train-rank, hpo-predict), hpo, the dashboard
#   scripts/build.sh --tests    and every test (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HPO_BUILD_DIR:-build}
tests=OFF
for arg in "$@"; do
  case "$arg" in
    --tests) tests=ON ;;
    *) echo "build.sh: unknown argument '$arg' (--tests)" >&2; exit 2 ;;
  esac
done
jobs=$(nproc)
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHPO_BUILD_TESTS=$tests
elif [[ $tests == ON ]] && ! grep -q '^HPO_BUILD_TESTS:BOOL=ON' "$BUILD_DIR/CMakeCache.txt"; then
  cmake -S . -B "$BUILD_DIR" -DHPO_BUILD_TESTS=ON  # a product build gets its tests
fi
if [[ $tests == ON ]]; then
  cmake --build "$BUILD_DIR" -j"$jobs"
else
  cmake --build "$BUILD_DIR" -j"$jobs" --target hpo_product
fi
if [[ -f web/ui/package.json ]]; then
  scripts/build-ui.sh
fi
