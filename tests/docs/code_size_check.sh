#!/usr/bin/env bash
# The house's limits: no product file over 600 lines, no function over 120
# (scripts/function_lengths.awk counts from the signature to the closing
# brace). Prints each one over and fails. Product files: the C++ and Lua
# under the eight code folders (not web/ui, not tests).
set -uo pipefail
cd "$(dirname "$0")/../.."
folders=(core search trials ensemble workers web scheduler cli)
mapfile -t files < <(find "${folders[@]}" \( -name '*.cpp' -o -name '*.hpp' -o -name '*.lua' \) \
  -not -path 'web/ui/*' | sort)
over=0
while read -r n f; do
  [[ "$f" == total ]] && continue
  if ((n > 600)); then echo "$f: $n lines (at most 600)"; over=$((over + 1)); fi
done < <(wc -l "${files[@]}")
while read -r n where sig; do
  echo "$where: ${sig} is $n lines (at most 120)"
  over=$((over + 1))
done < <(printf '%s\n' "${files[@]}" | grep '\.cpp$' | xargs awk -f scripts/function_lengths.awk |
  awk '$1 > 120')
echo "code size check: $over over the limits"
((over == 0))
