#!/usr/bin/env bash
# Assisted generation (generate --draft) end to end on the real stories260K
# model ($SQUINT_SHARED_DATA; exit 77 skips without it):
#   - greedy: the same token ids as the target alone, for fp32 / int8 /
#     int4-g128 targets and drafts, K = 1, 4 and 15, through the end of the
#     context; the statistics report checks and the acceptance rate;
#   - sampling with a draft: a seed gives the same tokens at 1 and 2 threads;
#     another seed others;
#   - a draft that cannot draft for the target (another tokenizer, another
#     vocabulary) and bad --draft-tokens exit 2 with a message naming them.
# usage: test_assisted.sh SQUINT
set -u
SQ=$1
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
PY=/usr/bin/python3 G=$here/../fixture/gen_llama_fixture.py # with numpy
head -n 9 "$T" >"$W/calib.txt"
"$SQ" calibrate "$M" --corpus "$W/calib.txt" --samples 0 --window --threads 1 --quiet -o "$W/s.sqc" 2>"$W/err" \
  || { fail "calibrate: $(cat "$W/err")"; finish; }
q() { "$SQ" quantize "$M" --calib "$W/s.sqc" --threads 1 "$@" >/dev/null 2>"$W/err" || fail "quantize $*: $(cat "$W/err")"; }
q --recipe "$R/stories260K-int8.yaml" -o "$W/int8.sqm"
q --recipe "$R/stories260K-int4.yaml" --dynamic-acts -o "$W/int4.sqm"
declare -A model=([fp32]=$M [int8]=$W/int8.sqm [int4]=$W/int4.sqm)

# 1. greedy: identical ids. Prompts from held-out stories (their first words);
# 600 tokens run into the 512-token context, so the last checks are cut short.
mapfile -t prompts < <(tail -n 3 "$T" | cut -d' ' -f1-6)
prompts+=("")
gen() { "$SQ" generate "$1" --prompt "$2" --max-tokens 600 --ids --threads 1 --quiet "${@:3}"; }
same=0 runs=0 longest=0
for t in fp32 int8 int4; do
  for i in "${!prompts[@]}"; do
    gen "${model[$t]}" "${prompts[$i]}" >"$W/alone" 2>"$W/err" || fail "generate $t: $(cat "$W/err")"
    n=$(wc -w <"$W/alone"); [[ $n -gt $longest ]] && longest=$n
    for d in fp32 int8 int4; do
      for k in 1 4 15; do
        runs=$((runs + 1))
        gen "${model[$t]}" "${prompts[$i]}" --draft "${model[$d]}" --draft-tokens $k >"$W/assisted" 2>"$W/err"
        if cmp -s "$W/alone" "$W/assisted"; then same=$((same + 1))
        else echo "# differs: target $t draft $d K $k prompt '${prompts[$i]}': $(cat "$W/err")"; fi
      done
    done
  done
done
[[ $same -eq $runs && $runs -eq 108 ]] && pass "greedy with a draft == the target alone ($same of $runs runs: 3 targets x 3 drafts x K 1/4/15 x 4 prompts)" \
  || fail "greedy with a draft differs from the target alone in $((runs - same)) of $runs runs"
# Some prompts end in EOS early; the longest run must reach the context end.
[[ $longest -gt 400 ]] && pass "the runs reach the end of the context (longest $longest tokens)" \
  || fail "longest run $longest tokens: the context end is not exercised"

# a draft of another shape (HF layout, grouped-query attention, random
# weights, the same tokenizer): still the target's tokens, few accepted
if [[ -x $PY ]]; then
  "$PY" "$G" --shape gqa-small --tokenizer "$D/tok512.bin" "$W/gqa" >/dev/null
  gen "$M" "Once upon a time" --draft "$W/gqa" --draft-tokens 4 >"$W/assisted" 2>"$W/err"
  gen "$M" "Once upon a time" >"$W/alone"
  cmp -s "$W/alone" "$W/assisted" && pass "a random GQA draft (HF layout): the target's tokens" || fail "a random GQA draft changed the output: $(cat "$W/err")"
else echo "# SKIPPED: the GQA draft check needs numpy in $PY"; fi
"$SQ" generate "$M" --prompt "Once upon a time" --max-tokens 200 --draft "$W/int8.sqm" --threads 1 >/dev/null 2>"$W/stats"
if grep -Eq "assisted by .*int8.sqm: [0-9]+ checks of up to 4 drafted tokens, [0-9]+ of [0-9]+ kept \(acceptance [0-9.]+%\), [0-9.]+ tokens per check" "$W/stats"
then pass "statistics: checks and acceptance rate ($(grep -o 'acceptance [0-9.]*%' "$W/stats"))"
else fail "statistics: $(cat "$W/stats")"; fi
acc=$(grep -o 'acceptance [0-9.]*%' "$W/stats" | tr -dc '0-9.')
# an int8 draft of the same model agrees with it on most tokens
awk -v a="${acc:-0}" 'BEGIN {exit !(a > 60)}' && pass "int8 draft acceptance $acc% > 60%" || fail "int8 draft acceptance ${acc:-?}%"

# 2. sampling with a draft: reproducible, seed-dependent, thread-independent
P="Once upon a time, a little dog"
smp() { "$SQ" generate "$M" --prompt "$P" --max-tokens 120 --temperature 0.9 --top-p 0.9 --ids --quiet \
          --draft "$W/int4.sqm" --draft-tokens 4 "$@"; }
smp --seed 7 --threads 1 >"$W/s1"; smp --seed 7 --threads 2 >"$W/s2"; smp --seed 8 --threads 1 >"$W/s3"
[[ -s $W/s1 ]] && cmp -s "$W/s1" "$W/s2" && pass "sampling with a draft: seed 7 at 1 and 2 threads, same tokens" \
  || fail "sampling with a draft not reproducible"
! cmp -s "$W/s1" "$W/s3" && pass "sampling with a draft: seed 8 differs" || fail "seeds 7 and 8 gave the same tokens"
# speculative sampling draws from the target's distribution: over many
# seeds the mean log-probability the fp32 model gives its own samples and
# the assisted samples must agree (perplexity of the text under fp32)
for s in 1 2 3 4 5 6; do
  "$SQ" generate "$M" --prompt "$P" --max-tokens 120 --temperature 1 --seed $s --quiet --threads 1 >>"$W/plain.txt" 2>/dev/null
  echo >>"$W/plain.txt"
  "$SQ" generate "$M" --prompt "$P" --max-tokens 120 --temperature 1 --seed $s --quiet --threads 1 \
    --draft "$W/int4.sqm" >>"$W/spec.txt" 2>/dev/null
  echo >>"$W/spec.txt"
done
ppl() { "$SQ" perplexity "$M" --input "$1" --docs lines --threads 1 --json 2>/dev/null \
        | sed -n 's/.*"perplexity": *\([0-9.]*\).*/\1/p'; }
pp=$(ppl "$W/plain.txt") ps=$(ppl "$W/spec.txt")
awk -v a="$pp" -v b="$ps" 'BEGIN {exit !(a > 1 && b > 1 && b < a * 1.5 && a < b * 1.5)}' \
  && pass "samples with and without the draft: fp32 perplexity $pp vs $ps" \
  || fail "samples with the draft look unlike the target's: perplexity $pp vs $ps"

# 3. drafts that cannot draft, bad options
python3 - "$D/tok512.bin" "$W" <<'PY'
import struct, sys
t = bytearray(open(sys.argv[1], "rb").read())
o = 4  # max_token_length, then (score f32, length i32, bytes) per id
for i in range(259):
    o += 8 + struct.unpack_from("<i", t, o + 4)[0]
assert t[o + 8:o + 10] == b" t"
t[o + 9] = ord("T")  # id 259 " t" becomes " T"
open(sys.argv[2] + "/tok_other.bin", "wb").write(t)
PY
mkdir "$W/other"; cp "$M" "$W/other/stories260K.bin"; cp "$W/tok_other.bin" "$W/other/tok512.bin"
expect_error "a draft with another tokenizer" "other/stories260K.bin cannot draft for $M: the draft's tokenizer differs from the model's at id 259" "" \
  -- "$SQ" generate "$M" --draft "$W/other/stories260K.bin" --max-tokens 4
if [[ -x $PY && -f ${SQUINT_SHARED_DATA}/llama2c-tokenizer/tokenizer.bin ]]; then
  "$PY" "$G" --shape gqa-small --tokenizer "${SQUINT_SHARED_DATA}/llama2c-tokenizer/tokenizer.bin" "$W/v32k" >/dev/null
  expect_error "a draft of another vocabulary" "v32k cannot draft for $M: the draft's vocabulary has 32000 tokens, the model's 512" "" \
    -- "$SQ" generate "$M" --draft "$W/v32k" --max-tokens 4
fi
expect_error "--draft-tokens 0" "--draft-tokens must be an integer in [1, 15]" "" -- "$SQ" generate "$M" --draft "$W/int8.sqm" --draft-tokens 0
expect_error "--draft-tokens 16" "--draft-tokens must be an integer in [1, 15]" "" -- "$SQ" generate "$M" --draft "$W/int8.sqm" --draft-tokens 16
expect_error "a missing draft" "$W/none.sqm" "" -- "$SQ" generate "$M" --draft "$W/none.sqm"
head -c 3000 "$W/int8.sqm" >"$W/trunc.sqm"
expect_error "a truncated draft" "trunc.sqm" "" -- "$SQ" generate "$M" --draft "$W/trunc.sqm"
# issue 38 item 13: a llama2.c draft without its tokenizer beside it takes
# --draft-tokenizer (the message named --tokenizer, which is the target's)
mkdir "$W/bare"; cp "$M" "$W/bare/d.bin"
expect_error "a draft without its tokenizer names --draft-tokenizer" \
  "--draft: $W/bare/d.bin: no tokenizer of 512 tokens next to it (tokenizer.bin, tok512.bin): give one with --draft-tokenizer" "" \
  -- "$SQ" generate "$M" --draft "$W/bare/d.bin" --max-tokens 4
gen "$M" "Once upon a time" >"$W/alone" 2>/dev/null
gen "$M" "Once upon a time" --draft "$W/bare/d.bin" --draft-tokenizer "$D/tok512.bin" >"$W/assisted" 2>"$W/err"
[[ -s $W/alone ]] && cmp -s "$W/alone" "$W/assisted" && pass "--draft-tokenizer: the draft runs, the target's tokens" \
  || fail "--draft-tokenizer: $(cat "$W/err")"
expect_error "--draft-tokenizer without --draft" "--draft-tokenizer applies to a --draft model" "" \
  -- "$SQ" generate "$M" --draft-tokenizer "$D/tok512.bin" --max-tokens 4
expect_error "--draft-tokenizer with a packed draft" "a packed model holds its tokenizer: --draft-tokenizer does not apply" "" \
  -- "$SQ" generate "$M" --draft "$W/int8.sqm" --draft-tokenizer "$D/tok512.bin" --max-tokens 4
finish
