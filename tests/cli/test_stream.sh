#!/usr/bin/env bash
# squint embed as a stream: a pipe fed one line at a time gets each answer
# before the next line exists (no timing: the test holds its input open and
# waits for the output line); chunking does not change int8 output;
# --id-field carries ids; '-' takes jsonl and f32 and refuses npy clearly;
# a closed stdout ends it by SIGPIPE without a message.
# usage: test_stream.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1 GEN=$2
W=$(mktemp -d /tmp/squint-stream-XXXXXX)
. "$(dirname "$0")/lib.sh"
pid=""
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; rm -rf "$W"' EXIT

"$GEN" "$W/m" --shape tiny --seed 6 --outliers 2 >/dev/null || exit 1
"$SQ" quantize "$W/m" -o "$W/m.sqm" >/dev/null 2>&1 || { echo "quantize failed"; exit 1; }

# 1. Interactive: one line in, its embedding out, while the input stays open.
mkfifo "$W/in" "$W/out"
"$SQ" embed "$W/m.sqm" --input - --quiet <"$W/in" >"$W/out" &
pid=$!
exec 3>"$W/in" 4<"$W/out"
echo "the first sentence" >&3
if read -r -t 60 line <&4 && [[ $line == '{"index":0,"embedding":['* ]]; then
  pass "line 1 answered while the input is still open"
else fail "no answer to line 1 before more input (got '${line:-}')"; fi
echo "a second, different sentence" >&3
read -r -t 60 line2 <&4 && [[ $line2 == '{"index":1,'* ]] && pass "line 2 answered in turn" || fail "line 2: '${line2:-}'"
exec 3>&-
wait $pid && pass "exit 0 at end of input" || fail "exit status"
pid=""
exec 4<&-

# 2. Chunking never changes int8 output; the default equals a 1-text chunk.
for i in $(seq 1 300); do echo "text number $i about $((i * 7 % 13)) things."; done >"$W/t.txt"
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output "$W/a.jsonl" --quiet
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output "$W/b.jsonl" --chunk 7 --quiet
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output "$W/c.npy" --chunk 1 --quiet
[[ -s $W/a.jsonl ]] && cmp -s "$W/a.jsonl" "$W/b.jsonl" && pass "--chunk 7 = default (300 texts)" || fail "chunking changed the output"
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output "$W/a.npy" --quiet
cmp -s "$W/a.npy" "$W/c.npy" && pass ".npy written in chunks of 1 = in one chunk (header patched)" || fail ".npy chunked differs"
/usr/bin/python3 -c "import numpy as np,sys; a=np.load(sys.argv[1]); sys.exit(0 if a.shape==(300,32) else 1)" "$W/c.npy" &&
  pass ".npy header says (300, 32)" || fail ".npy shape"

# 3. ids from JSONL, carried through in order.
for i in $(seq 1 20); do printf '{"doc": {"id": "d-%d"}, "text": "document %d"}\n' "$i" "$i"; done >"$W/d.jsonl"
printf '{"doc": {"id": 77}, "text": "numeric id"}\n' >>"$W/d.jsonl"
"$SQ" embed "$W/m.sqm" --input "$W/d.jsonl" --id-field doc.id --chunk 4 --quiet >"$W/ids.jsonl"
/usr/bin/python3 - "$W/ids.jsonl" <<'PY' && pass "--id-field: every line carries its id, in order" || fail "--id-field"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = [f"d-{i}" for i in range(1, 21)] + [77]
sys.exit(0 if [r["id"] for r in rows] == want and [r["index"] for r in rows] == list(range(21)) else 1)
PY
expect_error "--id-field missing in a line" "id field \"nope\"" "" -- "$SQ" embed "$W/m.sqm" --input "$W/d.jsonl" --id-field nope --quiet
expect_error "--id-field on plain text" "needs JSONL" "" -- "$SQ" embed "$W/m.sqm" --input "$W/t.txt" --id-field x --quiet

# 4. Standard output: jsonl and f32 stream, npy is refused with the reason.
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output - --format f32 --quiet >"$W/stdout.f32"
"$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output "$W/file.f32" --quiet
[[ -s $W/stdout.f32 ]] && cmp -s "$W/stdout.f32" "$W/file.f32" && pass "--output - --format f32" || fail "f32 on stdout"
expect_error "npy on stdout refused" "needs a regular file" "" -- "$SQ" embed "$W/m.sqm" --input "$W/t.txt" --output - --format npy
[[ ! -e ./- && ! -e $W/- ]] && pass "no file named '-'" || fail "a file named '-' was written"

# 5. A reader that goes away: SIGPIPE ends squint, no error message.
for i in $(seq 1 5000); do echo "line $i"; done >"$W/many.txt"
"$SQ" embed "$W/m.sqm" --input "$W/many.txt" --chunk 64 --quiet 2>"$W/pipe.err" | head -n 1 >/dev/null
st=${PIPESTATUS[0]}
[[ $st -eq 141 && ! -s $W/pipe.err ]] && pass "closed stdout: ended by SIGPIPE (141), no message" ||
  fail "closed stdout: status $st, '$(head -c 200 "$W/pipe.err")'"
finish
