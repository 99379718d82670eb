#!/usr/bin/env bash
# ModernBERT through the commands on a 4-layer fixture with ModernBERT's
# byte-level tokenizer: tokenize ([CLS] ... [SEP] at ModernBERT's ids), embed
# with the same bytes at 1 and 2 threads and within 1e-6 at batch 1 and 8
# (fp32: OpenBLAS; the int8 .sqm: the same bytes, a packed batch's
# neighbours change nothing, windows included), a ~1,000-token
# input, calibrate, quantize (int8, int4-g128, int8 and bf16 attention),
# verify, embed from the .sqm near fp32, the same .sqm bytes at 1 and 2
# threads, inspect (the config rows, encoder.final_norm, no layer.0.ln_attn),
# and config.json values squint does not run refused naming file and key.
# usage: test_modernbert.sh SQUINT GEN_FIXTURE TOKENIZER_DIR
set -uo pipefail
SQ=$1 GEN=$2 TOK=$3
command -v zstd >/dev/null || { echo "SKIPPED: zstd is needed"; exit 77; }
W=$(mktemp -d /tmp/squint-modernbert-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
"$(dirname "$0")/../fixture/make_modernbert_fixture.sh" "$GEN" "$W/m" "$TOK" --shape tiny \
  --layers 4 --hidden 64 --heads 4 --ffn 96 --outliers 2 --seed 21 >/dev/null ||
  { echo "fixture failed"; exit 1; }
texts=$W/texts.txt
for i in $(seq 1 40); do
  echo "Sentence $i: the quick brown fox $((i * 7919 % 1000)) jumps over $((i % 13)) lazy dogs."
done >"$texts"
printf 'the quick brown fox jumps over the lazy dog, again and again. %.0s' $(seq 1 70) >>"$texts"
echo >>"$texts"

"$SQ" tokenize "$W/m" --input <(echo "hello world") --ids-only >"$W/ids.jsonl" 2>"$W/err"
grep -q '^{"ids":\[50281,[0-9,]*,50282\]}$' "$W/ids.jsonl" &&
  pass "tokenize: [CLS] ... [SEP] at ModernBERT's ids" || fail "tokenize: $(cat "$W/ids.jsonl" "$W/err")"
"$SQ" embed "$W/m" --input "$texts" --output "$W/t1.npy" --threads 1 --batch 8 2>"$W/err" ||
  fail "embed: $(cat "$W/err")"
"$SQ" embed "$W/m" --input "$texts" --output "$W/t2.npy" --threads 2 --batch 8 2>/dev/null
"$SQ" embed "$W/m" --input "$texts" --output "$W/b1.npy" --threads 2 --batch 1 2>/dev/null
cmp -s "$W/t1.npy" "$W/t2.npy" && pass "embeddings: the same bytes at 1 and 2 threads" ||
  fail "embeddings differ by thread count"
# fp32 from the folder: within 1e-6 across batches, not the same bytes (its
# linears are OpenBLAS sgemm tiles, and OpenBLAS's Haswell / Zen kernels
# round a row by where it sits in a many-row product: 1.2e-7 on Zen 3); the
# .sqm below is the same bytes at batch 1 and 8
/usr/bin/python3 -c 'import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(0 if np.abs(a - b).max() <= 1e-6 else 1)' \
  "$W/t1.npy" "$W/b1.npy" && pass "embeddings (fp32): within 1e-6 at batch 1 and 8" ||
  fail "fp32 embeddings differ by batch beyond 1e-6"
"$SQ" tokenize "$W/m" --input <(tail -n 1 "$texts") --ids-only --max-seq 8192 2>/dev/null |
  /usr/bin/python3 -c 'import json,sys; n=len(json.loads(sys.stdin.readline())["ids"]); sys.exit(0 if n > 900 else 1)' &&
  pass "a long input (past 900 tokens, the window is 128)" || fail "the long input is short"
"$SQ" calibrate "$W/m" --samples 16 --quiet -o "$W/m.sqc" 2>"$W/err" && pass "calibrate" ||
  fail "calibrate: $(cat "$W/err")"
printf 'weights:\n  type: int4-g128\n' >"$W/int4.yaml"
printf 'attention:\n  matmul: int8\n' >"$W/a8.yaml"
printf 'attention:\n  matmul: bf16\n' >"$W/a16.yaml"
cos() { # cos A.npy B.npy MIN: the mean cosine of the rows is at least MIN
  /usr/bin/python3 -c 'import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
print("mean %.5f min %.5f" % (c.mean(), c.min())); sys.exit(0 if c.mean() >= float(sys.argv[3]) else 1)' "$@"
}
for v in int8 int4 a8 a16; do
  r=(); [[ $v != int8 ]] && r=(--recipe "$W/$v.yaml")
  min=0.999; [[ $v == int4 ]] && min=0.9
  if "$SQ" quantize "$W/m" --calib "$W/m.sqc" "${r[@]}" -o "$W/$v.sqm" --threads 1 >/dev/null 2>&1 &&
    "$SQ" verify "$W/$v.sqm" >/dev/null 2>&1 &&
    "$SQ" embed "$W/$v.sqm" --input "$texts" --output "$W/$v.npy" --threads 2 2>/dev/null &&
    c=$(cos "$W/t1.npy" "$W/$v.npy" $min); then
    pass "quantize + verify + embed $v (cosine to fp32 $c)"
  else fail "quantize / verify / embed $v ($c)"; fi
done
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/int8-t2.sqm" --threads 2 >/dev/null 2>&1
cmp -s "$W/int8.sqm" "$W/int8-t2.sqm" && pass ".sqm bytes the same at 1 and 2 threads" ||
  fail ".sqm bytes differ by thread count"
"$SQ" embed "$W/int8.sqm" --input "$texts" --output "$W/int8-b1.npy" --threads 2 --batch 1 2>/dev/null
cmp -s "$W/int8.npy" "$W/int8-b1.npy" && pass "int8 .sqm: the same bytes at batch 1 and 32 (packed neighbours change nothing)" ||
  fail "int8 .sqm embeddings differ by batch"
"$SQ" embed "$W/a8.sqm" --input "$texts" --output "$W/a8-t1.npy" --threads 1 2>/dev/null
cmp -s "$W/a8.npy" "$W/a8-t1.npy" && pass "int8 attention: the same bytes at 1 and 2 threads" ||
  fail "int8 attention embeddings differ by thread count"
"$SQ" inspect "$W/int8.sqm" >"$W/inspect.txt" 2>&1
grep -q "^model: *modernbert" "$W/inspect.txt" && grep -q "activation geglu" "$W/inspect.txt" &&
  grep -q "local_window 128, global_every 3, rotary_base_local 10000" "$W/inspect.txt" &&
  grep -q "first_attention_norm false, final_norm true" "$W/inspect.txt" &&
  pass "inspect: modernbert, geglu, the window rows" || fail "inspect ($(grep config "$W/inspect.txt"))"
"$SQ" inspect "$W/int8.sqm" --tensors 2>/dev/null >"$W/tensors.txt"
if grep -q "encoder.final_norm.gamma" "$W/tensors.txt" && ! grep -q "layer.0.ln_attn" "$W/tensors.txt" &&
  grep -q "layer.1.ln_attn.gamma" "$W/tensors.txt"; then
  pass "rows: encoder.final_norm, no layer.0.ln_attn"
else fail "rows: $(grep -c . "$W/tensors.txt") lines"; fi

cp -r "$W/m" "$W/bad"
bad() { # bad NAME SED-EXPRESSION NEEDLE
  sed "$2" "$W/m/config.json" >"$W/bad/config.json"
  expect_error "config refused: $1" "$3" "" -- "$SQ" embed "$W/bad" --input "$texts" \
    --output "$W/bad.npy"
  rm -f "$W/bad.npy"
}
bad "norm_bias true" 's/"norm_bias": false/"norm_bias": true/' "config.json: norm_bias true"
bad "mlp_bias true" 's/"mlp_bias": false/"mlp_bias": true/' "config.json: mlp_bias true"
bad "tanh GELU" 's/"hidden_activation": "gelu"/"hidden_activation": "gelu_pytorch_tanh"/' \
  'config.json: hidden_activation "gelu_pytorch_tanh"'
bad "negative theta" 's/"local_rope_theta": 10000.0/"local_rope_theta": -1/' \
  "config.json: local_rope_theta -1"
bad "window 0" 's/"local_attention": 128/"local_attention": 0/' "local_attention"
finish
