#!/usr/bin/env bash
# The records' enum names are spelled once (trials/record_names.hpp), and the
# error codes once (core/result.hpp, web/api_errors.hpp): the
# Functions library uses the tables RedisStore writes into it (TrialState.running),
# and the OpenAPI document's enums are filled in from them. Prints every
# quoted name found elsewhere and fails. (A comment may name a value.)
set -uo pipefail
cd "$(dirname "$0")/../.."
names='queued|running|completed|failed|pruned|cancelled|finished|none|prune|cancel|release|search|ensemble|done|member'
found=0
# Lua: a quoted name outside a comment, but the function registered as 'release'.
while IFS= read -r hit; do
  echo "$hit"
  found=$((found + 1))
done < <(grep -nE "'($names)'" trials/redis/functions/*.lua | grep -vE ":[0-9]+:\s*--" |
  grep -vE "register\('release'")
# OpenAPI: an enum of the records written out.
while IFS= read -r hit; do
  echo "$hit"
  found=$((found + 1))
done < <(grep -nE '"enum": \["(queued|running|search|trial|none|invalid_argument)"' web/openapi.cpp)
# Error codes (core/result.hpp, web/api_errors.hpp): quoted in no other product file.
while IFS= read -r hit; do
  echo "$hit"
  found=$((found + 1))
done < <(grep -rnE '"(invalid_argument|not_found|lease_lost|payload_too_large|method_not_allowed|bad_request|header_too_large|range_not_satisfiable)"' \
  --include=*.cpp --include=*.hpp core trials search ensemble workers scheduler web cli 2>/dev/null |
  grep -vE '^core/result\.hpp:|^web/api_errors\.hpp:')
echo "names check: $found spelled outside trials/record_names.hpp"
((found == 0))
