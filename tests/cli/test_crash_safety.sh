#!/usr/bin/env bash
# Crash safety: `squint quantize` killed with SIGKILL at points spread over
# its run never leaves a partial or corrupt .sqm at the output path: the
# path holds either the previous complete file or the new complete one
# (verified), whenever the kill lands. (Temp files of a killed run may stay
# behind, named OUT.tmp.XXXXXX; they are never the output.)
# usage: test_crash_safety.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-kill-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
"$GEN" "$W/m" --layers 4 --hidden 128 --heads 4 --ffn 512 --max-pos 128 --outliers 2 >/dev/null || exit 1
"$SQ" calibrate "$W/m" --samples 32 --quiet -o "$W/m.sqc" 2>/dev/null || exit 1
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/out.sqm" 2>/dev/null || exit 1
cp "$W/out.sqm" "$W/first.sqm"
start=$(date +%s%N)
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/timing.sqm" 2>/dev/null
dur_ms=$(( ($(date +%s%N) - start) / 1000000 ))
bad=0
for i in $(seq 1 10); do
  delay_ms=$(( dur_ms * i / 10 ))
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/out.sqm" 2>/dev/null &
  pid=$!
  sleep "$(awk -v d="$delay_ms" 'BEGIN { printf "%.3f", d / 1000 }')"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if ! "$SQ" verify "$W/out.sqm" >/dev/null 2>&1; then
    bad=$((bad + 1)); echo "   kill after ${delay_ms} ms left a damaged $W/out.sqm"
  fi
done
[[ $bad -eq 0 ]] && pass "10 SIGKILLs during quantize (0..${dur_ms} ms): the output always verifies" ||
  fail "$bad kills left a damaged output"
cmp -s "$W/out.sqm" "$W/first.sqm" && pass "the surviving output is byte-identical to a complete build" ||
  fail "surviving output differs from a complete build"
finish
