#!/bin/bash
# Parity of `squint embed` (fp32) with the independent PyTorch NomicBERT
# oracle (torch_nomic.py) on a generated NomicBERT fixture, and the proof that
# the check can fail: the oracle with one mechanism changed (no rotary,
# GPT-J's interleaved rotary pairs, fc11 / fc12 swapped as gate and up) must
# disagree with squint.
#
#   check_nomic_parity.sh SQUINT GEN WORKDIR SHAPE   (SHAPE: tiny | nomic-base,
#       nomic-base being nomic-embed-text-v1.5's 12 x 768, 12 heads, 3072)
#
# Inputs: 200 STS-B test sentences (SQUINT_SHARED_DATA; a built-in list of
# varied lines when absent) and inputs past 512 tokens (rotary positions have
# no table: about 1,100 and 2,200 tokens at the tiny shape, 640 at
# nomic-base, where the oracle's cost grows with the square of the length).
# Exit: 0 pass, 1 mismatch, 77 skipped (no torch).
set -euo pipefail
SQ=$1 GEN=$2 W=$3 SHAPE=$4
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "skipped: $py has no torch"; exit 77
fi
mkdir -p "$W"
model=$W/nomic-$SHAPE
args=(--family nomic --shape "$SHAPE" --outliers 4 --seed 13)
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
if [[ $SHAPE == tiny ]]; then reps=(8 60 120); min_long=2000; else reps=(8 35); min_long=600; fi
for n in "${reps[@]}"; do printf "$long %.0s" $(seq 1 "$n"); echo; done >>"$input"
echo "== squint embed ($(wc -l <"$input") inputs)"
out=$W/out-$SHAPE
"$SQ" embed "$model" --input "$input" --output "$out.npy" --tokens-output "$out.tok.jsonl" \
    --hidden-output "$out.hid.npy" --batch 8 --threads 2
oracle=("$py" "$here/torch_nomic.py" "$model" --tokens "$out.tok.jsonl" --hidden "$out.hid.npy"
        --embeddings "$out.npy" --threads 2 --min-inputs 200 --min-long "$min_long")
echo "== oracle"
"${oracle[@]}"
. "$here/wrong_oracles.sh"
run_wrong_oracles "$py" "$here/torch_nomic.py" "$model" "$out" 100 no-rotary interleaved-rotary gate-up-swapped || exit 1
echo "PASS: squint matches the NomicBERT oracle, and each wrong oracle fails"
