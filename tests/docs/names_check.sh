#!/usr/bin/env bash
# The records' enum names are spelled once (trials/record_names.hpp): the
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
done < <(grep -nE '"enum": \["(queued|running|search|trial|none)"' web/openapi.cpp)
echo "names check: $found spelled outside trials/record_names.hpp"
((found == 0))
