#!/bin/bash
# Parity of `squint embed` (fp32) with the independent PyTorch MPNet oracle
# (torch_mpnet.py) on a generated MPNet fixture, and the proof that the check
# can fail: the oracle without one mechanism (the relative attention bias,
# RoBERTa's position ids) must disagree with squint.
#
#   check_mpnet_parity.sh SQUINT GEN WORKDIR SHAPE   (SHAPE: tiny | bge-base,
#       bge-base being all-mpnet-base-v2's 12 x 768, 12 heads, 3072, 512 tokens)
#
# Inputs: 200 STS-B test sentences (SQUINT_SHARED_DATA; a built-in list of
# varied lines when absent) and lines past the position limit, so
# truncation and the last positions are exercised.
# Exit: 0 pass, 1 mismatch, 77 skipped (no torch).
set -euo pipefail
SQ=$1 GEN=$2 W=$3 SHAPE=$4
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "skipped: $py has no torch"; exit 77
fi
mkdir -p "$W"
model=$W/mpnet-$SHAPE
args=(--family mpnet --shape "$SHAPE" --outliers 4 --pooling mean --seed 11)
vocab=${SQUINT_SHARED_DATA:-}/bge-small-en-v1.5/vocab.txt
[[ $SHAPE != tiny && -n ${SQUINT_SHARED_DATA:-} && -f $vocab ]] && args+=(--vocab "$vocab")
"$GEN" "$model" "${args[@]}"

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
for n in 8 60; do printf "$long %.0s" $(seq 1 $n); echo; done >>"$input"
echo "== squint embed ($(wc -l <"$input") inputs)"
out=$W/out-$SHAPE
"$SQ" embed "$model" --input "$input" --output "$out.npy" --tokens-output "$out.tok.jsonl" \
    --hidden-output "$out.hid.npy" --batch 8 --threads 2
oracle=("$py" "$here/torch_mpnet.py" "$model" --tokens "$out.tok.jsonl" --hidden "$out.hid.npy"
        --embeddings "$out.npy" --threads 2 --min-inputs 200)
echo "== oracle"
"${oracle[@]}"
. "$here/wrong_oracles.sh"
run_wrong_oracles "$py" "$here/torch_mpnet.py" "$model" "$out" 100 no-relative-bias index-positions || exit 1
echo "PASS: squint matches the MPNet oracle, and each wrong oracle fails"
