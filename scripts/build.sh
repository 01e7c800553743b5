#!/usr/bin/env bash
# Configures and builds hpo into build/ (and the dashboard into web/ui/dist).
# Idempotent: a second run rebuilds only what changed.
#   scripts/build.sh             the product: hpo-scheduler, hpo-worker (with
#                                hpo-train-rank, hpo-predict), hpo, the dashboard
#   scripts/build.sh --tests     and every test (scripts/test.sh)
#   scripts/build.sh --no-torch  the service without the LibTorch trainers
#                                (hpo-scheduler, hpo-worker for command trials,
#                                hpo): what the demo's first sweep needs, with
#                                no LibTorch installed; a later plain build adds them
#   scripts/build.sh --no-ui     not the dashboard
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HPO_BUILD_DIR:-build}
tests=OFF torch=ON ui=1
for arg in "$@"; do
  case "$arg" in
    --tests) tests=ON ;;
    --no-torch) torch=OFF ;;
    --no-ui) ui=0 ;;
    *) echo "build.sh: unknown argument '$arg' (--tests, --no-torch, --no-ui)" >&2; exit 2 ;;
  esac
done
if [[ $tests == ON && $torch == OFF ]]; then
  echo "build.sh: --tests needs the LibTorch trainers (drop --no-torch)" >&2; exit 2
fi
jobs=$(nproc)
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHPO_BUILD_TESTS=$tests -DHPO_WITH_TORCH=$torch
else
  # An earlier build with other choices: tests are added, never dropped.
  settings=()
  [[ $tests == ON ]] && ! grep -q '^HPO_BUILD_TESTS:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" &&
    settings+=(-DHPO_BUILD_TESTS=ON)
  grep -q "^HPO_WITH_TORCH:BOOL=$torch" "$BUILD_DIR/CMakeCache.txt" ||
    settings+=(-DHPO_WITH_TORCH=$torch)
  ((${#settings[@]} == 0)) || cmake -S . -B "$BUILD_DIR" "${settings[@]}"
fi
if [[ $tests == ON ]]; then
  cmake --build "$BUILD_DIR" -j"$jobs"
else
  cmake --build "$BUILD_DIR" -j"$jobs" --target hpo_product
fi
if ((ui)) && [[ -f web/ui/package.json ]]; then
  scripts/build-ui.sh
fi
