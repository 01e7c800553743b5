#!/usr/bin/env bash
# The fuzzers: builds the libFuzzer targets of tests/fuzz with clang,
# AddressSanitizer and UBSan into build-fuzz/, then runs each one for
# HPO_FUZZ_SECONDS (60) from the committed seed corpus and the regression
# inputs. New interesting inputs go to build-fuzz/corpus/<target> (kept between
# runs); a crash, sanitizer report, leak or hang (> 10 s on one input) fails the
# run and leaves the input in build-fuzz/artifacts/<target>/: fix the bug, then
# commit the input under tests/fuzz/regressions/<target>/ (the regular build
# replays it in CTest from then on).
#   scripts/fuzz.sh                 every target, 60 s each
#   HPO_FUZZ_SECONDS=600 scripts/fuzz.sh http
#   HPO_FUZZ_OPT=-O0 scripts/fuzz.sh   the optimisation level of a new
#                                   build-fuzz (-O1; the test command uses -O0:
#                                   a shorter build for its 20 s smoke runs)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${HPO_FUZZ_BUILD_DIR:-build-fuzz}
each=${HPO_FUZZ_SECONDS:-60}
if (($# > 0)); then targets=("$@"); else targets=(spec http metric_line dataset predictions); fi

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  # -O1: libFuzzer's usual level under the sanitizers.
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DHPO_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${HPO_FUZZ_OPT:--O1} -g1 -DNDEBUG"
fi
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

declare -A dict=([spec]=json.dict [metric_line]=json.dict [http]=http.dict)
declare -A max_len=([spec]=65536 [http]=65536 [metric_line]=4096 [dataset]=16384 [predictions]=8192)
summary=()
status=0
for t in "${targets[@]}"; do
  work="$BUILD/corpus/$t"
  artifacts="$BUILD/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  dirs=("$work" "tests/fuzz/corpus/$t")
  [[ -d "tests/fuzz/regressions/$t" ]] && dirs+=("tests/fuzz/regressions/$t")
  args=(-max_total_time="$each" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]}"
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  [[ -n "${dict[$t]:-}" ]] && args+=(-dict="tests/fuzz/${dict[$t]}")
  log="$BUILD/fuzz_$t.log"
  echo "fuzz: $t for ${each}s"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$BUILD/tests/fuzz/fuzz_$t" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    tail -n 60 "$log"
    echo "fuzz: $t failed; the input is in $artifacts/ (log: $log)"
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  units=$(ls "$work" | wc -l)
  summary+=("$(printf '%-12s %-7s %6ss %12s executions %6s corpus inputs' "$t" "$result" "$each" "${execs:-?}" "$units")")
done
echo "fuzz summary ($(date -u +%F), clang $(clang -dumpversion), ASan+UBSan):"
printf '  %s\n' "${summary[@]}"
exit $status
