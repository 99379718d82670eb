#!/usr/bin/env bash
# libsquint (include/squint.h) in the build tree: the API checks of
# libsquint_check (errors, options, one model shared by 4 threads),
# examples/embed.c giving the bytes of `squint embed` (int8 .sqm and fp32
# checkpoint; CRLF, empty lines, more lines than one chunk), and
# examples/rerank.c (squint_score_pairs) giving the bytes of `squint rerank`
# for a bi-encoder, a cross-encoder and a causal LM judge (a tiny Qwen3
# fixture: skipped, said so, without the shared Qwen3 tokenizer or numpy).
# usage: test_libsquint.sh SQUINT GEN_FIXTURE LIBSQUINT_CHECK EXAMPLE_EMBED EXAMPLE_RERANK
set -uo pipefail
SQ=$1 GEN=$2 CHECK=$3 EX=$4 EXR=$5
W=$(mktemp -d /tmp/squint-lib-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"

"$GEN" "$W/m" --shape tiny --seed 5 --outliers 2 >/dev/null || exit 1
"$SQ" quantize "$W/m" -o "$W/m.sqm" >"$W/q.log" 2>&1 || { cat "$W/q.log"; echo "quantize failed"; exit 1; }
"$CHECK" "$W/m.sqm" "$W/m" || fail "libsquint_check"

# 600 lines: the example embeds in chunks of 256, squint embed all at once.
for i in $(seq 1 600); do
  case $((i % 7)) in
  0) printf '\n' ;;
  1) printf 'line %d with CRLF\r\n' "$i" ;;
  *) printf 'sentence number %d about topic %d, and some words.\n' "$i" $((i * 31 % 97)) ;;
  esac
done >"$W/in.txt"
# int8 is exact whatever the batch; fp32 sgemm rounds differently with the
# rows of its call (OpenBLAS picks kernels by M), so the fp32 checkpoint is
# compared on 200 lines, one chunk of the example, one batch set of embed.
head -n 200 "$W/in.txt" >"$W/in200.txt"
for run in "m.sqm in.txt" "m in200.txt"; do
  set -- $run
  "$SQ" embed "$W/$1" --input "$W/$2" --quiet >"$W/cli.jsonl" || fail "squint embed $1"
  "$EX" "$W/$1" <"$W/$2" >"$W/lib.jsonl" || fail "example embed $1"
  if [[ -s $W/cli.jsonl ]] && cmp -s "$W/cli.jsonl" "$W/lib.jsonl"; then pass "examples/embed.c = squint embed ($1, $(wc -l <"$W/$2") lines)"
  else fail "examples/embed.c differs from squint embed ($1)"; fi
done
"$EX" "$W/m.sqm" <"$W/in.txt" >"$W/lib2.jsonl"
"$EX" "$W/m.sqm" 1 <"$W/in.txt" >"$W/lib1.jsonl"
[[ -s $W/lib1.jsonl ]] && cmp -s "$W/lib1.jsonl" "$W/lib2.jsonl" && pass "example at 1 thread = default threads" || fail "thread count changed the output"
expect_rc "example: missing model" 2 "nope.sqm" "" -- "$EX" "$W/nope.sqm"

# squint_score_pairs = squint rerank, for each kind of model that ranks.
"$GEN" "$W/ce" --shape tiny --seed 7 --cross-encoder 1 >/dev/null || fail "cross-encoder fixture"
"$SQ" quantize "$W/ce" -o "$W/ce.sqm" >/dev/null 2>&1 || fail "quantize the cross-encoder"
rankers=("m.sqm" "m" "ce.sqm" "ce")
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
if [[ -f $T/tokenizer.json ]] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 "$(dirname "$0")/../fixture/gen_qwen3_fixture.py" --shape tiny --seed 3 \
    --tokenizer-dir "$T" "$W/judge" >/dev/null && rankers+=("judge") || fail "Qwen3 fixture"
else
  echo "SKIPPED: the judge (Qwen3-Reranker) through libsquint: no \$SQUINT_SHARED_DATA/qwen3-tokenizer or numpy"
fi
sed -n '1,40p' "$W/in.txt" | grep -v '^$' >"$W/docs.txt"
printf 'A second document about topic 3.\n' >>"$W/docs.txt"
for r in "${rankers[@]}"; do
  "$SQ" rerank "$W/$r" --query "sentence about topic 3" --docs "$W/docs.txt" >"$W/cli-r.jsonl" 2>"$W/err" ||
    { cat "$W/err"; fail "squint rerank $r"; continue; }
  "$EXR" "$W/$r" "sentence about topic 3" <"$W/docs.txt" >"$W/lib-r.jsonl" 2>"$W/err" || cat "$W/err"
  if [[ -s $W/cli-r.jsonl ]] && cmp -s "$W/cli-r.jsonl" "$W/lib-r.jsonl"; then
    pass "examples/rerank.c = squint rerank ($r, $(wc -l <"$W/docs.txt") documents: $(head -c 60 "$W/lib-r.jsonl")...)"
  else fail "examples/rerank.c differs from squint rerank ($r)"; diff "$W/cli-r.jsonl" "$W/lib-r.jsonl" | head -4; fi
done
if [[ " ${rankers[*]} " == *" judge "* ]]; then
  "$SQ" rerank "$W/judge" --query "sentence about topic 3" --docs "$W/docs.txt" \
    --instruction "Find a sentence on the same topic" >"$W/cli-i.jsonl" 2>/dev/null
  "$EXR" "$W/judge" "sentence about topic 3" "Find a sentence on the same topic" <"$W/docs.txt" >"$W/lib-i.jsonl"
  [[ -s $W/lib-i.jsonl ]] && cmp -s "$W/cli-i.jsonl" "$W/lib-i.jsonl" && ! cmp -s "$W/lib-i.jsonl" "$W/lib-r.jsonl" &&
    pass "the judge's instruction per call (squint_score_options.instruction) = rerank --instruction, and it changes the scores" ||
    fail "the judge's instruction through libsquint"
fi
# Cross-encoders and judges do not embed: a refusal naming the call to use.
expect_rc "example embed: a cross-encoder" 1 "squint_score_pairs" "" -- "$EX" "$W/ce.sqm" <"$W/docs.txt"
expect_rc "example rerank: an instruction for a bi-encoder" 1 "instruction is for a causal LM" "" -- \
  "$EXR" "$W/m.sqm" "q" "an instruction" <"$W/docs.txt"
finish
