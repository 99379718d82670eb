#!/bin/bash
# Parity of `squint embed` (fp32) with the independent PyTorch ModernBERT
# oracle (torch_modernbert.py) on a generated ModernBERT fixture with
# ModernBERT's byte-level tokenizer (tests/tokenizer/modernbert-fixture), and
# the proof that the check can fail: the oracle with one mechanism changed
# (every layer global, GeGLU's halves swapped, no final_norm) must disagree
# with squint.
#
#   check_modernbert_parity.sh SQUINT GEN WORKDIR SHAPE TOKENIZER_DIR
#       SHAPE: tiny (4 layers x 64, 4 heads, ffn 96: two local layers and
#       two global ones) | modernbert-base (ModernBERT-base's 22 x 768, 12
#       heads, 1152)
#
# Inputs: 200 STS-B test sentences (SQUINT_SHARED_DATA; a built-in list of
# varied lines when absent) and two inputs of about 370 and 1,000 tokens,
# past the local window of 128 (so local and global layers differ).
# Exit: 0 pass, 1 mismatch, 77 skipped (no torch or no zstd).
set -euo pipefail
SQ=$1 GEN=$2 W=$3 SHAPE=$4 TOK=$5
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "skipped: $py has no torch"; exit 77
fi
command -v zstd >/dev/null || { echo "skipped: zstd is needed"; exit 77; }
mkdir -p "$W"
model=$W/modernbert-$SHAPE
args=(--outliers 4 --seed 13)
if [[ $SHAPE == tiny ]]; then args+=(--shape tiny --layers 4 --hidden 64 --heads 4 --ffn 96)
else args+=(--shape "$SHAPE"); fi
"$here/../fixture/make_modernbert_fixture.sh" "$GEN" "$model" "$TOK" "${args[@]}"

input=$W/input-$SHAPE.txt
stsb=${SQUINT_SHARED_DATA:-/nonexistent}/stsb-glue/original/sts-test.tsv
if [[ -f $stsb ]]; then
    cut -f6,7 "$stsb" | tr "\t" "\n" | awk 'NF && !seen[$0]++ && n++ < 200' >"$input"
else
    for i in $(seq 1 200); do
        echo "Line $i: the quick brown fox $((i * 7919 % 1000)) jumps over $((i % 13)) lazy dogs."
    done >"$input"
fi
long="The quick brown fox jumps over the lazy dog, and then it runs back home again."
for n in 20 55; do printf "$long %.0s" $(seq 1 "$n"); echo; done >>"$input"
echo "== squint embed ($(wc -l <"$input") inputs)"
out=$W/out-$SHAPE
"$SQ" embed "$model" --input "$input" --output "$out.npy" --tokens-output "$out.tok.jsonl" \
    --hidden-output "$out.hid.npy" --batch 8 --threads 2
oracle=("$py" "$here/torch_modernbert.py" "$model" --tokens "$out.tok.jsonl" --hidden "$out.hid.npy"
        --embeddings "$out.npy" --threads 2 --min-inputs 200 --min-long 900)
echo "== oracle"
"${oracle[@]}"
. "$here/wrong_oracles.sh"
run_wrong_oracles "$py" "$here/torch_modernbert.py" "$model" "$out" 129 no-local-window gelu-on-gate no-final-norm || exit 1
echo "PASS: squint matches the ModernBERT oracle, and each wrong oracle fails"
