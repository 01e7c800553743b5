#!/usr/bin/env bash
# The house's figures, measured from the sources (no build needed):
#   the ten largest product files, the product files over 600 lines,
#   the functions over 80 lines (scripts/function_lengths.awk), and
#   the signatures that take a whole store connection rather than its roles.
# Product files: the C++ and Lua under the eight code folders (not web/ui, not tests).
set -euo pipefail
cd "$(dirname "$0")/.."
folders=(core search trials ensemble workers web scheduler cli)
files() { find "${folders[@]}" \( -name '*.cpp' -o -name '*.hpp' -o -name '*.lua' \) -not -path 'web/ui/*' | sort; }

echo "== ten largest product files (lines)"
files | xargs wc -l | grep -v ' total$' | sort -rn | head -10
echo "== product files over 600 lines: $(files | xargs wc -l | grep -v ' total$' | awk '$1 > 600' | wc -l)"
files | xargs wc -l | grep -v ' total$' | awk '$1 > 600' | sort -rn
echo "== functions over 80 lines (over 120: $(files | grep '\.cpp$' | xargs awk -f scripts/function_lengths.awk | awk '$1 > 120' | wc -l))"
files | grep '\.cpp$' | xargs awk -f scripts/function_lengths.awk | awk '$1 > 80' | sort -rn
echo "== signatures taking a whole store (trials::Store&): $(files | xargs grep -nE '[(,] *(const )?(trials::)?Store ?&' | wc -l)"
