#!/usr/bin/env bash
# The real trained model end to end: Universal Sentence Encoder Lite
# (TensorFlow.js export in $SQUINT_SHARED_DATA/use-lite-tfjs) is tokenized,
# calibrated on the bundled QASPER subset, quantized with
# recipes/use-lite.yaml, verified, and measured against its fp32 graph on
# STS-B with the recipe's gates. Bad exports are refused.
# usage: test_use_lite.sh SQUINT
set -uo pipefail
SQ=$1
here=$(cd "$(dirname "$0")" && pwd)
data=${SQUINT_SHARED_DATA:-$here/../../../shared/data}
M=$data/use-lite-tfjs
if [[ ! -f $M/model.json ]]; then
  echo "SKIPPED: no USE Lite model at $M"
  exit 77
fi
W=$(mktemp -d /tmp/squint-use-XXXXXX)
trap 'rm -rf "$W"' EXIT
export SOURCE_DATE_EPOCH=1764633600
source "$here/lib.sh"
recipe=$here/../../recipes/use-lite.yaml
sts=$data/stsb-glue/original/sts-test.tsv

printf 'hello world\nThe quick brown fox jumps over the lazy dog.\n\n' >"$W/t.txt"
"$SQ" tokenize "$M" --input "$W/t.txt" >"$W/tok.jsonl" &&
  grep -q '"ids":\[2002,102,311\]' "$W/tok.jsonl" &&
  pass "tokenize the tfjs export (SentencePiece ids)" || fail "tokenize the tfjs export"

"$SQ" calibrate "$M" --samples 64 --quiet -o "$W/use.sqc" &&
  "$SQ" inspect "$W/use.sqc" | grep -q "2 layers x 512 hidden" &&
  pass "calibrate USE Lite" || fail "calibrate USE Lite"
"$SQ" inspect "$W/use.sqc" | grep -q "^0      res  " && pass "the widening layer's residual projection is observed" ||
  fail "no res statistics for layer 0"

"$SQ" quantize "$M" --calib "$W/use.sqc" --recipe "$recipe" -o "$W/use.sqm" >"$W/q.log" 2>&1 &&
  grep -q "layer.0.res" "$W/q.log" && pass "quantize USE Lite" || { fail "quantize USE Lite"; cat "$W/q.log"; }
"$SQ" quantize "$M" --calib "$W/use.sqc" --recipe "$recipe" --threads 1 -o "$W/use1.sqm" >/dev/null 2>&1 &&
  cmp -s "$W/use.sqm" "$W/use1.sqm" && pass "quantize is byte-identical at 1 and 2 threads" ||
  fail "quantize output depends on the thread count"
"$SQ" verify "$W/use.sqm" >/dev/null 2>&1 && pass "verify the .sqm" || fail "verify the .sqm"
"$SQ" inspect "$W/use.sqm" >"$W/i.txt" 2>&1 && grep -q "t2t" "$W/i.txt" &&
  grep -q "folded_into_layernorm\|folded into LayerNorm\|layernorm" "$W/i.txt" &&
  pass "inspect shows the t2t architecture and the LayerNorm fold" || { fail "inspect .sqm"; head -40 "$W/i.txt"; }
"$SQ" tokenize "$W/use.sqm" --input "$W/t.txt" | cmp -s - "$W/tok.jsonl" &&
  pass "the .sqm tokenizes like the export" || fail "the .sqm tokenizes differently"
"$SQ" embed "$W/use.sqm" --input "$W/t.txt" -o "$W/e.npy" --quiet 2>/dev/null && [[ -s $W/e.npy ]] &&
  pass "embed with the .sqm (empty text included)" || fail "embed with the .sqm"

if [[ -f $sts ]]; then
  "$SQ" embed-run "$W/use.sqm" --input "$sts" --reference "$M" --recipe "$recipe" --limit 300 \
    --gate stsb_spearman_drop=0.003 \
    --report "$W/r.json" --quiet >"$W/er.txt" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] && pass "embed-run: the recipe's gates pass on STS-B ($(grep -E 'cosine|Spearman' "$W/er.txt" | tr -s ' ' | tr '\n' ';'))" ||
    { fail "embed-run gates: exit $rc"; cat "$W/er.txt"; }
  "$SQ" embed-run "$W/use.sqm" --input "$sts" --reference "$M" --limit 50 --gate cos_min=0.999999 \
    --quiet >"$W/g.txt" 2>&1
  rc=$?
  [[ $rc -eq 1 ]] && grep -q "cos_min" "$W/g.txt" && pass "an unmet gate exits 1 naming it" ||
    fail "strict gate: exit $rc"
else
  echo "SKIPPED: STS-B gate (no $sts)"
fi

# issue 38 item 14: the int8 embeddings do not depend on the batch (the
# dense+tanh head ran through sgemm above 16 pooled rows, row by row below):
# 40 texts of different lengths at --batch 1, 7, 17, 32 and 33, byte for byte
python3 - "$W/b.txt" <<'PY'
import random, sys
r = random.Random(11)
w = "the a river cold night music city dog runs quickly under bright blue sky".split()
open(sys.argv[1], "w").write("".join(" ".join(r.choice(w) for _ in range(r.randint(1, 30))) + "\n" for _ in range(40)))
PY
same=0
for b in 1 7 17 32 33; do
  "$SQ" embed "$W/use.sqm" --input "$W/b.txt" --batch $b -o "$W/b$b.npy" --quiet 2>/dev/null &&
    cmp -s "$W/b1.npy" "$W/b$b.npy" && same=$((same + 1))
done
[[ $same -eq 5 ]] && pass "int8 embeddings byte-identical at --batch 1, 7, 17, 32, 33" ||
  fail "int8 embeddings depend on the batch ($same of 5 equal to --batch 1)"

# Damaged exports: a short shard, a model.json that is not the manifest.
mkdir -p "$W/bad"
cp "$M"/* "$W/bad/"
chmod u+w "$W/bad"/*
truncate -s 1000 "$W/bad/group1-shard7of7"
expect_error "truncated shard" "group1-shard7of7" "$W/x.sqc" \
  -- "$SQ" calibrate "$W/bad" --samples 4 --quiet -o "$W/x.sqc"
cp "$M/group1-shard7of7" "$W/bad/"
echo '{"modelTopology": {"node": []}, "weightsManifest": 5}' >"$W/bad/model.json"
expect_error "manifest not an array" "model.json" "$W/x.npy" \
  -- "$SQ" embed "$W/bad" --input "$W/t.txt" -o "$W/x.npy"
rm "$W/bad/vocab.json"
cp "$M/model.json" "$W/bad/"
expect_error "no vocab.json" "vocab.json" "$W/x.npy" \
  -- "$SQ" embed "$W/bad" --input "$W/t.txt" -o "$W/x.npy"
finish
