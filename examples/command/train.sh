#!/bin/sh
# A user's own training program, as hpo runs it: the parameters arrive in argv
# (rendered from the spec's argv template) and as JSON in $HPO_PARAMS; metrics go
# to stdout as `hpo-metric {json}` lines. This toy "trains" for 3 epochs.
lr=$1
layers=$2
for epoch in 1 2 3; do
  loss=$(awk -v lr="$lr" -v l="$layers" -v e="$epoch" 'BEGIN { d = log(lr) / log(10) + 2.5; print d * d + 0.1 * l + 1 / e }')
  echo "hpo-metric {\"step\": $epoch, \"loss\": $loss}"
done
echo "hpo-metric {\"final\": true, \"loss\": $loss}"
