#!/usr/bin/env bash
# Decoder quantization end to end on the real stories260K model
# ($SQUINT_SHARED_DATA; exit 77 skips without it): calibrate on the first 9
# stories of tinystories-sample, quantize int8 (SmoothQuant, static scales)
# and int4-g128 (per-token int8 activations), generate from each, perplexity
# on a fixed held-out slice (the last 3 stories) within the bars, the same
# .sqm bytes at 1 and 2 threads, a deliberately bad quantization failing
# the bar, and forged decoder .sqm files refused (exit 2, the file named).
# usage: test_decoder_quant.sh SQUINT SQM_POKE
set -u
SQ=$1 POKE=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../cli/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
D=${SQUINT_SHARED_DATA:-}/stories260K
T=${SQUINT_SHARED_DATA:-}/tinystories-sample/TinyStories-valid-head.txt
if [[ ! -f $D/stories260K.bin || ! -f $T ]]; then
  echo "SKIP: stories260K / tinystories-sample not found under \$SQUINT_SHARED_DATA"; exit 77
fi
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
M=$D/stories260K.bin R=$here/../../recipes
export SQUINT_WRITE_CHECK=1 SOURCE_DATE_EPOCH=0
head -n 9 "$T" >"$W/calib.txt"
tail -n 3 "$T" >"$W/held.txt"

"$SQ" calibrate "$M" --corpus "$W/calib.txt" --samples 0 --window --threads 1 --quiet -o "$W/s.sqc" 2>"$W/err" \
  && grep -q "architecture: llama" <("$SQ" inspect "$W/s.sqc" --json 2>/dev/null; strings "$W/s.sqc") \
  && pass "calibrate writes a decoder .sqc" || fail "calibrate: $(cat "$W/err")"
q() { "$SQ" quantize "$M" --calib "$W/s.sqc" --json "$@" >/dev/null 2>"$W/err"; }
q --recipe "$R/stories260K-int8.yaml" -o "$W/int8.sqm" --threads 1 && pass "quantize int8" || fail "quantize int8: $(cat "$W/err")"
q --recipe "$R/stories260K-int4.yaml" --dynamic-acts -o "$W/int4.sqm" --threads 1 && pass "quantize int4-g128" || fail "quantize int4: $(cat "$W/err")"
# issue 38 item 15: the log of a --dynamic-acts quantize says so for every
# linear (it printed "alpha 0.00 err nan" on 20 linears before)
"$SQ" quantize "$M" --calib "$W/s.sqc" --recipe "$R/stories260K-int4.yaml" --dynamic-acts -o "$W/int4.log.sqm" --threads 1 2>"$W/qlog"
[[ $(grep -c 'dynamic acts' "$W/qlog") -eq 21 ]] && ! grep -qi 'nan' "$W/qlog" \
  && pass "--dynamic-acts: every linear's log line says dynamic acts, no nan" || fail "--dynamic-acts log: $(head -5 "$W/qlog")"
q --recipe "$R/stories260K-int8.yaml" -o "$W/int8.t2.sqm" --threads 2
cmp -s "$W/int8.sqm" "$W/int8.t2.sqm" \
  && pass ".sqm bytes identical at 1 and 2 threads" || fail ".sqm bytes differ between 1 and 2 threads"
q --recipe "$R/stories260K-int4.yaml" --dynamic-acts -o "$W/int4.t2.sqm" --threads 2
cmp -s "$W/int4.sqm" "$W/int4.t2.sqm" \
  && pass "GPTQ int4 .sqm bytes identical at 1 and 2 threads" || fail "GPTQ int4 .sqm bytes differ between 1 and 2 threads"
# the same recipe rounding to nearest, for the GPTQ comparison below
sed 's/int4_rounding: gptq/int4_rounding: nearest/' "$R/stories260K-int4.yaml" >"$W/rtn.yaml"
q --recipe "$W/rtn.yaml" --dynamic-acts -o "$W/int4rtn.sqm" --threads 1 || fail "quantize int4 nearest: $(cat "$W/err")"

for m in int8 int4; do
  out=$("$SQ" generate "$W/$m.sqm" --prompt "Once upon a time" --max-tokens 64 --threads 1 --quiet 2>"$W/err")
  [[ ${#out} -gt 100 ]] && pass "generate from $m.sqm" || fail "generate $m: $out $(cat "$W/err")"
  # SwiGLU as its own pass instead of inside ffn_down's quantize step (linear.h)
  unf=$(SQUINT_FUSE=0 "$SQ" generate "$W/$m.sqm" --prompt "Once upon a time" --max-tokens 64 --threads 1 --quiet 2>"$W/err")
  [[ "$unf" == "$out" ]] && pass "$m.sqm: the same text with SwiGLU fused or not" ||
    fail "$m.sqm: SQUINT_FUSE=0 changes the text"
  nll() { sed -n 's/.*"mean_nll": *\([0-9.]*\).*/\1/p'; }
  pf=$("$SQ" perplexity "$W/$m.sqm" --input "$W/held.txt" --docs lines --threads 2 --json 2>/dev/null | nll)
  pu=$(SQUINT_FUSE=0 "$SQ" perplexity "$W/$m.sqm" --input "$W/held.txt" --docs lines --threads 2 --json 2>/dev/null | nll)
  [[ -n "$pf" && "$pf" == "$pu" ]] && pass "$m.sqm: the same mean NLL fused or not ($pf)" ||
    fail "$m.sqm: perplexity fused $pf, unfused $pu"
done

ppl() { "$SQ" perplexity "$1" --input "$W/held.txt" --docs lines --threads 1 --json 2>/dev/null \
        | sed -n 's/.*"perplexity": *\([0-9.]*\).*/\1/p'; }
# within BAR (a ratio) of fp32: the check the bars rest on
within() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN {exit !(a > 0 && a <= b * r)}'; }
p32=$(ppl "$M") p8=$(ppl "$W/int8.sqm") p4=$(ppl "$W/int4.sqm")
echo "# perplexity on the held-out slice: fp32 $p32, int8 $p8, int4-g128 $p4"
within "$p8" "$p32" 1.01 && pass "int8 perplexity within 1% of fp32" || fail "int8 perplexity $p8 vs fp32 $p32"
# int4-g128 misses the issue's 5% on this 64-wide model (docs/decoders.md);
# regression bars above the measured figures on this slice.
p4r=$(ppl "$W/int4rtn.sqm")
echo "# int4-g128 rounded to nearest: $p4r"
within "$p4" "$p32" 1.15 && pass "int4-g128 (GPTQ) perplexity within 15% of fp32" || fail "int4 perplexity $p4 vs fp32 $p32"
within "$p4r" "$p32" 1.20 && pass "int4-g128 (nearest) perplexity within 20% of fp32" || fail "int4 nearest perplexity $p4r vs fp32 $p32"
# GPTQ must take back a real share of what rounding to nearest loses
awk -v g="$p4" -v r="$p4r" -v f="$p32" 'BEGIN {exit !(g - f < 0.8 * (r - f))}' \
  && pass "GPTQ loses < 80% of what nearest rounding loses" || fail "GPTQ $p4 vs nearest $p4r (fp32 $p32)"
# a deliberately bad quantization (int8 activations clipped at the median)
cat >"$W/bad.yaml" <<'YAML'
version: 1
observer: {method: percentile, percentile: 50, guard: clip}
smoothquant: {enabled: false}
outliers: {enabled: false}
weights: {type: int8}
YAML
q --recipe "$W/bad.yaml" -o "$W/bad.sqm"
pb=$(ppl "$W/bad.sqm")
! within "$pb" "$p32" 1.01 && pass "a bad quantization fails the bar (ppl $pb)" || fail "bad quantization passed: $pb"

# forged files (checksums recomputed): each refused by generate, naming the
# file, and by verify (exit 1): verify runs the one decoder loader
# (libquant/sqm/sqm_decoder.h), so it agrees with generate on every file
verify_agrees() { # NAME NEEDLE
  local msg rc
  msg=$("$SQ" verify "$W/f.sqm" 2>&1); rc=$?
  [[ $rc -eq 1 && $msg == *DAMAGED*"$2"* ]] && pass "$1: verify refuses it too" ||
    fail "$1: verify exit $rc, want 1 with '$2' ($msg)"
}
forge() { # NAME NEEDLE TENSOR INDEX OP VALUE [BASE]
  "$POKE" "$W/${7:-int8}.sqm" "$W/f.sqm" "$3" "$4" "$5" "$6" 2>/dev/null || { fail "$1: sqm_poke"; return; }
  expect_error "$1" "$2" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
  verify_agrees "$1" "${2#f.sqm}"
}
mforge() { # NAME NEEDLE OLD NEW: a metadata value changed (same length)
  "$POKE" "$W/int8.sqm" "$W/f.sqm" --replace "$3" "$4" 2>/dev/null || { fail "$1: sqm_poke"; return; }
  expect_error "$1" "$2" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
  verify_agrees "$1" "$2"
}
forge "NaN RMSNorm weight" "f.sqm" layer.1.rms_att.weight 3 --set-f32 nan
forge "inf embedding" "f.sqm" embeddings.word 100 --set-f32 inf
forge "negative act_scale" "act_scale" layer.0.qkv.act_scale 0 --set-f32 -1
forge "wsum off by one" "f.sqm" layer.2.ffn_up.wsum 5 --add 1
forge "NaN tokenizer score" "f.sqm" tokenizer.scores 1 --set-i32 2146959360
# the forgeries verify used to accept (f64 element 0's high word: 1e300)
forge "a score beyond f32" "is not a finite f32" tokenizer.scores 1 --set-i32 2117592124
forge "a vocabulary without its final NUL" "does not end with a NUL byte" tokenizer.vocab 2638 --set-i8 65
forge "513 pieces for vocab_size 512" "holds 513 pieces" tokenizer.vocab 1 --set-i8 0
forge "a dynamic act_scale in a static file" "layer.0.qkv.act_scale" layer.0.qkv.act_scale 0 --set-f32 0
forge "a static act_scale in a dynamic file" "metadata activations is dynamic" layer.1.ffn_up.act_scale 0 --set-f32 0.5 int4
mforge "hf-bpe without its keys" "tokenizer.add_prefix is missing" "type: llama2c-bpe" "type: hf-bpe     "
mforge "a config with fewer layers than the file" "config describes fewer layers" "layers: 5" "layers: 4"
head -c 5000 "$W/int8.sqm" >"$W/trunc.sqm"
expect_error "truncated decoder .sqm" "trunc.sqm" "" -- "$SQ" generate "$W/trunc.sqm" --threads 1
expect_error "a decoder .sqm is not an embedding model" "int8.sqm" "" -- "$SQ" embed "$W/int8.sqm" --input "$W/held.txt"
"$SQ" verify "$W/int8.sqm" >"$W/v" 2>&1 && pass "verify accepts the decoder .sqm" || fail "verify: $(cat "$W/v")"
"$POKE" "$W/int8.sqm" "$W/f.sqm" layer.1.rms_ffn.weight 0 --set-f32 nan 2>/dev/null
"$SQ" verify "$W/f.sqm" >"$W/v" 2>&1; rc=$?
[[ $rc -eq 1 ]] && grep -q 'DAMAGED tensor "layer.1.rms_ffn.weight"' "$W/v" \
  && pass "verify refuses a forged decoder .sqm, naming the tensor" || fail "verify forged: rc $rc $(cat "$W/v")"
# tokenize reads a decoder: BOS + the BPE ids, the same from the checkpoint and the .sqm
tk() { "$SQ" tokenize "$1" --input "$W/held.txt" --ids-only 2>"$W/err"; }
t1=$(tk "$M") t2=$(tk "$W/int4.sqm")
[[ -n $t1 && $t1 == "$t2" && $(head -1 <<<"$t1") == '{"ids":[1,'* ]] \
  && pass "tokenize: BOS + the same ids from the checkpoint and the .sqm" || fail "tokenize: $(head -c 200 <<<"$t1") / $(head -c 200 <<<"$t2") $(cat "$W/err")"
"$SQ" inspect "$W/int4.sqm" >"$W/i" 2>&1 && grep -q "llama" "$W/i" && pass "inspect shows the decoder .sqm" || fail "inspect: $(head -5 "$W/i")"
"$SQ" diff "$W/int8.sqm" "$W/int4.sqm" >"$W/d" 2>&1; [[ $? -le 1 ]] && pass "diff compares decoder .sqm files" || fail "diff: $(head -5 "$W/d")"

# the int8 classifier (recipe classifier.type, SQM.md 10.6; both stories260K
# recipes ship it): within 0.5% of the perplexity with an fp32 classifier,
# greedy assisted generation with it unchanged, and files whose metadata and
# tensors disagree refused
sed '/^classifier:/,$d' "$R/stories260K-int8.yaml" >"$W/c32.yaml"
grep -q "^classifier:" "$R/stories260K-int8.yaml" && ! grep -q "^classifier:" "$W/c32.yaml" \
  || fail "stories260K-int8.yaml has no classifier section to take away"
q --recipe "$W/c32.yaml" -o "$W/c32.sqm" --threads 1 || fail "quantize with an fp32 classifier: $(cat "$W/err")"
cp "$W/int8.sqm" "$W/c8.sqm"
"$SQ" inspect "$W/c8.sqm" 2>&1 | grep -q "lm head: *int8" && pass "inspect names the int8 lm head" || fail "inspect c8"
"$SQ" inspect "$W/c32.sqm" 2>&1 | grep -q "lm head: *int8" && fail "inspect: c32 has an int8 lm head" || pass "without the section the lm head stays fp32"
pc=$(ppl "$W/c32.sqm")
echo "# perplexity with an fp32 classifier: $pc (int8 classifier: $p8)"
within "$p8" "$pc" 1.005 && pass "int8 classifier within 0.5% of the fp32 classifier's perplexity" \
  || fail "int8 classifier perplexity $p8 vs $pc"
[[ $pc != "$p8" ]] && pass "the int8 classifier is what runs (perplexity differs)" || fail "c32 perplexity equals int8's: $pc"
g1=$("$SQ" generate "$W/c8.sqm" --prompt "Once upon a time" --max-tokens 96 --threads 1 --quiet 2>&1)
g2=$("$SQ" generate "$W/c8.sqm" --prompt "Once upon a time" --max-tokens 96 --threads 2 --quiet \
       --draft "$W/int4.sqm" --draft-tokens 4 2>&1)
[[ ${#g1} -gt 100 && $g1 == "$g2" ]] && pass "int8 classifier: greedy assisted output = target alone, 1 vs 2 threads" \
  || fail "c8 assisted: [$g1] vs [$g2]"
cforge() { # NAME NEEDLE OLD NEW
  "$POKE" "$W/c8.sqm" "$W/f.sqm" --replace "$3" "$4" 2>/dev/null || { fail "$1: sqm_poke"; return; }
  expect_error "$1" "$2" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
}
cforge "packed classifier, metadata says fp32" "classifier_type is fp32" "classifier_type: int8" "classifier_type: fp32"
cforge "classifier_type int4" "classifier_type must be fp32 or int8" "classifier_type: int8" "classifier_type: int4"
cforge "int8 classifier without its tensors" "f.sqm" "classifier.weight" "classifieX.weight"
"$POKE" "$W/int8.sqm" "$W/f.sqm" --replace "activations: static" "activations: sta1ic" 2>/dev/null
expect_error "unknown activations value" "activations must be static or dynamic" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
"$POKE" "$W/int4.sqm" "$W/f.sqm" --replace "activations: dynamic" "activations: static " 2>/dev/null
expect_error "activations static, act_scales 0" "metadata activations is static" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
"$POKE" "$W/c8.sqm" "$W/f.sqm" classifier.wsum 7 --add 1 2>/dev/null
expect_error "int8 classifier wsum off by one" "f.sqm" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
# decoder attention in bf16 and int8 (recipe attention.matmul, SQM.md 10.3):
# written into the file, named by inspect, a perplexity close to f32
# attention's but not equal to it (it runs), greedy assisted generation
# (a verify pass of several rows) equal to the target alone at 1 and 2
# threads: the quantized linears and the attention kernels give a row the
# same bits in a prefill and in a step, so decoding equals prefill exactly
for a in bf16 int8; do
  { cat "$R/stories260K-int8.yaml"; printf 'attention:\n  matmul: %s\n' "$a"; } >"$W/a-$a.yaml"
  q --recipe "$W/a-$a.yaml" -o "$W/a-$a.sqm" --threads 1 || fail "quantize with $a attention: $(cat "$W/err")"
  "$SQ" verify "$W/a-$a.sqm" >/dev/null 2>&1 && pass "$a attention: verify accepts it" || fail "verify a-$a"
  "$SQ" inspect "$W/a-$a.sqm" 2>&1 | grep -q "^attention: *$a" && pass "inspect names $a attention" || fail "inspect a-$a"
  pa=$(ppl "$W/a-$a.sqm")
  echo "# perplexity with $a attention: $pa (f32 attention: $p8)"
  within "$pa" "$p8" 1.01 && [[ $pa != "$p8" ]] && pass "$a attention: within 1% of f32 attention's perplexity, and runs" \
    || fail "$a attention perplexity $pa vs $p8"
  g1=$("$SQ" generate "$W/a-$a.sqm" --prompt "Once upon a time" --max-tokens 96 --threads 1 --quiet 2>&1)
  g2=$("$SQ" generate "$W/a-$a.sqm" --prompt "Once upon a time" --max-tokens 96 --threads 2 --quiet \
         --draft "$W/int4.sqm" --draft-tokens 4 2>&1)
  [[ ${#g1} -gt 100 && $g1 == "$g2" ]] && pass "$a attention: greedy assisted output = target alone, 1 vs 2 threads" \
    || fail "$a attention assisted: [$g1] vs [$g2]"
done
"$POKE" "$W/a-int8.sqm" "$W/f.sqm" --replace "attention: int8" "attention: int9" 2>/dev/null
expect_error "unknown attention value" "attention must be one of" "" -- "$SQ" generate "$W/f.sqm" --max-tokens 4 --threads 1
finish
