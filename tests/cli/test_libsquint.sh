#!/usr/bin/env bash
# libsquint (include/squint.h) in the build tree: the API checks of
# libsquint_check (errors, options, one model shared by 4 threads), and
# examples/embed.c giving the bytes of `squint embed` (int8 .sqm and fp32
# checkpoint; CRLF, empty lines, more lines than one chunk).
# usage: test_libsquint.sh SQUINT GEN_FIXTURE LIBSQUINT_CHECK EXAMPLE_EMBED
set -uo pipefail
SQ=$1 GEN=$2 CHECK=$3 EX=$4
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
finish
