#!/bin/bash
# Parity of `squint embed` (fp32) against the independent PyTorch oracle
# (torch_encoder.py) on a generated fixture checkpoint.
#
#   check_torch_parity.sh --squint BIN --gen BIN --workdir DIR
#       [--shape tiny|bge-small] [--outliers K] [--tol X] [--python PY]
#       [--threads N] [--self-check-only]
#
# Steps: generate the fixture (with planted outlier dims), run the oracle's
# --self-check (nn.TransformerEncoderLayer vs hand-written float64 BERT), write
# an input file of varied lines (short, long, punctuation, non-ASCII, some
# longer than max_position_embeddings so truncation is exercised), run
# `squint embed` with batch 4, and compare hidden states and pooled embeddings
# with the oracle, which runs all inputs in one padded batch.
# Exit: 0 pass, 1 mismatch, 2 usage/setup error, 77 skipped (no torch).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
squint= gen= work= shape=tiny outliers=2 tol=1e-4 py=/usr/bin/python3 threads=2 only_self=0
die() { echo "check_torch_parity: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --squint) squint=${2:?}; shift 2 ;;
    --gen) gen=${2:?}; shift 2 ;;
    --workdir) work=${2:?}; shift 2 ;;
    --shape) shape=${2:?}; shift 2 ;;
    --outliers) outliers=${2:?}; shift 2 ;;
    --tol) tol=${2:?}; shift 2 ;;
    --python) py=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --self-check-only) only_self=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
    esac
done
[ -n "$gen" ] && [ -n "$work" ] || die "--gen and --workdir are required"
[ "$only_self" = 1 ] || [ -n "$squint" ] || die "--squint is required (or --self-check-only)"
case "$shape" in tiny|bge-small) ;; *) die "--shape must be tiny or bge-small" ;; esac

if ! [ -x "$py" ] || ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "skipped: $py has no torch (install python3-torch and python3-numpy)"
    exit 77
fi

mkdir -p "$work"
model="$work/model-$shape"
gen_args=(--shape "$shape" --outliers "$outliers" --seed 7)
if [ "$shape" = bge-small ]; then
    # The real vocabulary when the shared data is there: realistic token ids.
    vocab="${SQUINT_SHARED_DATA:-}/bge-small-en-v1.5/vocab.txt"
    [ -n "${SQUINT_SHARED_DATA:-}" ] && [ -f "$vocab" ] && gen_args+=(--vocab "$vocab")
fi
"$gen" "$model" "${gen_args[@]}"

oracle=("$py" "$here/torch_encoder.py" "$model" --tol "$tol" --threads "$threads")
echo "== oracle self-check"
"${oracle[@]}" --self-check
[ "$only_self" = 1 ] && exit 0

# ---- inputs -----------------------------------------------------------------
input="$work/input-$shape.txt"
long_sentence="The quick brown fox jumps over the lazy dog, and then it runs back home again."
repeat() { local i out=""; for ((i = 0; i < $1; i++)); do out+="$2 "; done; printf '%s' "${out% }"; }
{
    cat <<'TEXT'
hello
Hello, world!
What is the capital of France?
The quick brown fox jumps over the lazy dog.
Quantization of transformer models on CPUs: int8 weights, fp32 accumulators.
A sentence with    multiple   spaces and	a tab.
Numbers like 3.14159, 2024 and 1,000,000 are tokens too.
UPPERCASE AND lowercase Are The Same After Lowercasing.
Punctuation!!! ??? ... ;;; --- ((nested)) [brackets] {braces} <angle>
email@example.com https://example.org/path?query=1&x=2#frag
Café au lait, naïve résumé, façade, jalapeño, Ångström.
Straße, Grüße, Ökonomie und Übermut.
北京是中国的首都。
日本語のテキストと English mixed 文.
Русский текст и ελληνικά γράμματα.
Emoji are unknown tokens 🙂👍 to most vocabularies.
unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious
x
a b c d e f g h i j k l m n o p q r s t u v w x y z
Search queries and documents are embedded into vectors for retrieval.
TEXT
    if [ "$shape" = tiny ]; then
        # tiny has max_position_embeddings 64: these are truncated
        repeat 8 "$long_sentence"; echo
        repeat 30 "word"; echo
        repeat 70 "token"; echo
    else
        # bge-small: one line near, two past 512 tokens
        repeat 25 "$long_sentence"; echo
        repeat 40 "$long_sentence"; echo
        repeat 600 "data"; echo
    fi
} >"$input"

# ---- squint ---------------------------------------------------------------------
echo "== squint embed ($(wc -l <"$input") inputs)"
out="$work/out-$shape"
rm -f "$out".npy "$out".tok.jsonl "$out".hid.npy
"$squint" embed "$model" --input "$input" --output "$out.npy" --tokens-output "$out.tok.jsonl" \
    --hidden-output "$out.hid.npy" --batch 4 --threads "$threads" ||
    { echo "check_torch_parity: squint embed failed (exit $?)"; exit 1; }

echo "== oracle compare"
"${oracle[@]}" --tokens "$out.tok.jsonl" --hidden "$out.hid.npy" --embeddings "$out.npy" \
    --input "$input" --min-at-max 2
