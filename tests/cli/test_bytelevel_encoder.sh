#!/usr/bin/env bash
# An encoder whose tokenizer.json is a byte-level BPE with [CLS] / [SEP]
# (ModernBERT's tokenizer kind): the tiny BERT fixture at a 50,368-row
# vocabulary with tests/tokenizer/modernbert-fixture's tokenizer, through
# tokenize (folder and .sqm: the same ids, [MASK] with lstrip), calibrate,
# quantize (the writer's hf-bytelevel section and rows, checked by
# SQUINT_WRITE_CHECK), verify, inspect and embed (folder and .sqm agree in
# ranking); a cross-encoder of the same vocabulary ranks with rerank.
# usage: test_bytelevel_encoder.sh SQUINT GEN_FIXTURE FIXTURE_DIR
set -uo pipefail
SQ=$1 GEN=$2 FIX=$3
command -v zstd >/dev/null || { echo "SKIPPED: zstd is needed"; exit 77; }
W=$(mktemp -d /tmp/squint-blenc-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
export SQUINT_WRITE_CHECK=1 OMP_NUM_THREADS=2
PY=/usr/bin/python3

# a vocab.txt of 50,368 tokens gives the fixture its vocab_size; the
# byte-level tokenizer then replaces the WordPiece one
$PY -c "
import sys
sp = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
open(sys.argv[1], 'w').write(''.join((sp[i] if i < 5 else 't%d' % i) + '\n' for i in range(50368)))
" "$W/vocab.txt"
mk() { # mk DIR [gen options]: a fixture with the byte-level tokenizer
    local d=$1; shift
    "$GEN" --shape tiny --vocab "$W/vocab.txt" "$@" "$d" >/dev/null || return 1
    rm -f "$d/vocab.txt" "$d/tokenizer.json" "$d/special_tokens_map.json"
    zstd -dqc "$FIX/tokenizer.json.zst" >"$d/tokenizer.json" &&
        cp "$FIX/tokenizer_config.json" "$d/tokenizer_config.json"
}
mk "$W/m" || { echo "FAIL - fixture"; exit 1; }
mk "$W/ce" --cross-encoder 1 --ce-activation sigmoid || { echo "FAIL - cross-encoder fixture"; exit 1; }

cat >"$W/t.txt" <<'T'
hello world
The [MASK] sat on the mat.
a   b      c   [SEP] d
Ünïcödé straße 北京 日本語 😀
def f(x):	return x ** 2
T
"$SQ" tokenize "$W/m" --input "$W/t.txt" --ids-only >"$W/ids_dir.jsonl" 2>"$W/err" ||
    fail "tokenize the folder: $(cat "$W/err")"
if sed -n 2p "$W/ids_dir.jsonl" | grep -q '^{"ids":\[50281,[0-9,]*,50284,[0-9,]*,50282\]}$'; then
    pass "tokenize: [CLS] ... [MASK] ... [SEP] at ModernBERT's ids"
else fail "tokenize ids: $(sed -n 2p "$W/ids_dir.jsonl")"; fi
# lstrip: "The [MASK]" has no id for the space before [MASK]
if [[ "$(sed -n 2p "$W/ids_dir.jsonl")" == "$("$SQ" tokenize "$W/m" --input <(echo 'The[MASK] sat on the mat.') --ids-only 2>/dev/null)" ]]; then
    pass "[MASK] takes the white space on its left"
else fail "lstrip on [MASK]"; fi

"$SQ" calibrate "$W/m" --samples 64 --quiet -o "$W/m.sqc" 2>"$W/err" || fail "calibrate: $(cat "$W/err")"
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>"$W/err" ||
    fail "quantize: $(cat "$W/err")"
if "$SQ" verify "$W/m.sqm" >/dev/null 2>&1; then pass "verify"; else fail "verify"; fi
if "$SQ" inspect "$W/m.sqm" 2>&1 | grep -q "type hf-bytelevel, vocab_size 50368.*cls_id 50281, sep_id 50282.*pair bert"; then
    pass "inspect: hf-bytelevel with the encoder's ids"
else fail "inspect: $("$SQ" inspect "$W/m.sqm" 2>&1 | grep tokenizer)"; fi
"$SQ" tokenize "$W/m.sqm" --input "$W/t.txt" --ids-only >"$W/ids_sqm.jsonl" 2>/dev/null
if cmp -s "$W/ids_dir.jsonl" "$W/ids_sqm.jsonl"; then pass "tokenize: .sqm = folder"
else fail "tokenize: .sqm differs from the folder"; fi
"$SQ" tokenize "$W/m.sqm" --input "$W/t.txt" --ids-only --max-seq 4 >"$W/ids4.jsonl" 2>/dev/null
if [[ "$(head -1 "$W/ids4.jsonl")" == '{"ids":[50281,999,2072,50282]}' ]]; then
    pass "truncation keeps [SEP]"
else fail "truncation: $(head -1 "$W/ids4.jsonl")"; fi

"$SQ" embed "$W/m" --input "$W/t.txt" --output "$W/e_dir.jsonl" 2>/dev/null || fail "embed folder"
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output "$W/e_sqm.jsonl" 2>/dev/null || fail "embed .sqm"
if $PY - "$W/e_dir.jsonl" "$W/e_sqm.jsonl" <<'PY'
import json, sys
a = [json.loads(l)["embedding"] for l in open(sys.argv[1])]
b = [json.loads(l)["embedding"] for l in open(sys.argv[2])]
assert len(a) == len(b) == 5
cos = [sum(x * y for x, y in zip(u, v)) for u, v in zip(a, b)]  # both normalized
assert min(cos) > 0.98, cos
print("int8 vs fp32 cosine min %.4f" % min(cos))
PY
then pass "embed: the int8 .sqm follows the folder"; else fail "embed .sqm vs folder"; fi

printf '%s\n' '{"query": "what causes tides", "document": "The moon pulls the oceans."}' \
    '{"query": "what causes tides", "document": "Bread is baked in an oven at 200 degrees, then left to cool before it is sliced."}' \
    >"$W/pairs.jsonl"
if "$SQ" rerank "$W/ce" --pairs "$W/pairs.jsonl" --max-seq 12 --output "$W/r.jsonl" 2>"$W/err" &&
    [[ $(wc -l <"$W/r.jsonl") -eq 2 ]]; then
    pass "rerank --pairs with the byte-level tokenizer"
else fail "rerank: $(cat "$W/err")"; fi
finish
