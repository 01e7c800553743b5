# Prints "<lines> <file>:<line> <signature>" for every function defined at
# column 0, counted from its signature's first line to its closing brace, as
# clang-format lays C++ out (a body opened at the end of the signature, closed
# by "}" in column 0). Used by scripts/code-figures.sh and the size check.
FNR == 1 { inside = 0; pending = 0 }
{
  if (inside) {
    if ($0 ~ /^\}/) {
      sig = name
      sub(/\(.*/, "", sig)
      printf "%d %s:%d %s\n", FNR - start + 1, FILENAME, start, sig
      inside = 0
    }
    next
  }
  if ($0 ~ /^(namespace|class|struct|enum|union|extern|template|#|\/\/|using|typedef)/ || $0 ~ / = |^[^(]*=/) {
    pending = 0
    next
  }
  if ($0 ~ /^[A-Za-z_~].*\(.*\{$/) {  # signature and body's brace on one line
    inside = 1; start = FNR; name = $0; pending = 0
    next
  }
  if ($0 ~ /^[A-Za-z_~].*\(.*[,(]$/) {  # a signature continued on the next lines
    pending = 1; start = FNR; name = $0
    next
  }
  if (pending) {
    if ($0 ~ /\{$/) { inside = 1; pending = 0; next }
    if ($0 ~ /;$/ || $0 ~ /^$/ || $0 ~ /^[^ ]/) pending = 0
  }
}
