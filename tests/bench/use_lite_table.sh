#!/usr/bin/env bash
# The accuracy table of docs/evidence.md "Accuracy on a real model": Universal Sentence
# Encoder Lite, fp32 vs int8 (recipes/use-lite.yaml: MSE clip, activation
# zero points, SmoothQuant alpha auto), the same with SmoothQuant alpha 0.5
# and without SmoothQuant, int4-g128, and the clip / zero-point ablation
# (percentile 99.99 or MSE, symmetric or zero point; pctsym is the recipe
# before zero points), on STS-B (original sts-test), SciFact (BEIR test
# qrels) and SST-2 (dev, probe), plus fp32/int8/int4 speed side by side.
# Takes about an hour on 2 cores (SciFact embeds 5,483 texts per variant).
# usage: tests/bench/use_lite_table.sh [SQUINT] [SHARED_DATA] [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SQ=${1:-$here/../../build/squint}
data=${2:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
W=${3:-/tmp/squint-use-table}
M=$data/use-lite-tfjs
mkdir -p "$W"
cd "$W"
variant() { # NAME OBSERVER ZERO_POINT SMOOTHQUANT WEIGHTS
  cat >"$1.yaml" <<EOF
version: 1
model: {architecture: t2t}
observer: {method: $2, zero_point: $3}
smoothquant: $4
weights: {type: $5}
EOF
}
variant a05 mse true "{enabled: true, alpha: 0.5}" int8
variant nosq mse true "{enabled: false}" int8
variant int4 mse true "{enabled: true, alpha: auto}" int4-g128
variant pctsym percentile false "{enabled: true, alpha: auto}" int8
variant pctzp percentile true "{enabled: true, alpha: auto}" int8
variant msesym mse false "{enabled: true, alpha: auto}" int8
cp "$here/../../recipes/use-lite.yaml" auto.yaml
[[ -f use.sqc ]] || "$SQ" calibrate "$M" --quiet -o use.sqc
for v in auto a05 nosq int4 pctsym pctzp msesym; do
  [[ -f $v.sqm ]] || "$SQ" quantize "$M" --calib use.sqc --recipe $v.yaml -o $v.sqm >q_$v.log 2>&1
done
for v in auto a05 nosq int4 pctsym pctzp msesym; do
  echo "=== $v ($(stat -c %s $v.sqm) bytes)"
  "$SQ" embed-run $v.sqm --input "$data/stsb-glue/original/sts-test.tsv" --reference "$M" --quiet
  "$SQ" embed-run $v.sqm --input "$data/scifact/beir-format" --reference "$M" --quiet
  "$SQ" embed-run $v.sqm --input "$data/sst2-glue/dev.tsv" --reference "$M" --quiet
done
echo "=== speed (2 threads, alternating)"
for r in 1 2 3; do
  for m in "$M" auto.sqm int4.sqm; do
    "$SQ" bench "$m" --seq 128 --threads 2 --iters 5 | grep -E "seq/s|latency"
  done
done
