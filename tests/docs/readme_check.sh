#!/usr/bin/env bash
# Every header of a code folder is named in that folder's README.md (or, for a
# subfolder without one, its parent's): as `name.hpp`, `name.cpp`, `name.{`,
# `name.*` or `name.hpp/.cpp`. Prints each one that is not and fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
missing=0
for h in $(find core search trials ensemble workers web scheduler cli -name '*.hpp' -not -path '*/node_modules/*' | sort); do
  dir=$(dirname "$h")
  readme="$dir/README.md"
  [[ -f "$readme" ]] || readme="$(dirname "$dir")/README.md"
  base=$(basename "$h")
  stem=${base%.hpp}
  if ! grep -qF -e "$base" -e "$stem.cpp" -e "$stem.{" -e "$stem.*" -e "\`$stem\`" "$readme"; then
    echo "$readme does not name $h"
    missing=$((missing + 1))
  fi
done
echo "readme check: $missing header(s) not named"
((missing == 0))
