#!/usr/bin/env bash
# End-to-end tests of `squint calibrate` and `squint inspect` on .sqc files:
# planted outliers found, byte-identical output across runs and thread
# counts, merge, every observer, corpus formats, and bad inputs (clear
# message, exit 2, no output file, existing output untouched).
# usage: test_calibrate.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-calib-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
export SOURCE_DATE_EPOCH=1764633600 # fixed date: runs are compared byte for byte

"$GEN" "$W/m" --shape tiny --seed 5 --outliers 3 >/dev/null || exit 1
"$GEN" "$W/other" --shape tiny --seed 6 >/dev/null || exit 1

# --- planted outliers are the top outliers ---
"$SQ" calibrate "$W/m" --samples 48 --quiet -o "$W/a.sqc" || fail "calibrate on the bundled corpus"
planted=$(python3 -c 'import json,sys; print(" ".join(map(str, sorted(json.load(open(sys.argv[1]))["squint_fixture"]["outlier_dims"]))))' "$W/m/config.json")
found=$("$SQ" inspect "$W/a.sqc" --json --top 3 | python3 -c 'import json,sys; print(" ".join(map(str, sorted(o["channel"] for o in json.load(sys.stdin)["outlier_channels"]))))')
[[ -n "$planted" && "$planted" == "$found" ]] && pass "inspect lists exactly the planted outliers ($planted)" ||
  fail "outliers: planted '$planted', inspect found '$found'"
"$SQ" inspect "$W/a.sqc" | grep -q "attention probabilities" && pass "inspect text output" || fail "inspect text"

# --- determinism ---
"$SQ" calibrate "$W/m" --samples 48 --quiet -o "$W/b.sqc" && cmp -s "$W/a.sqc" "$W/b.sqc" &&
  pass "two runs byte-identical" || fail "two runs differ"
"$SQ" calibrate "$W/m" --samples 48 --quiet --threads 1 -o "$W/t1.sqc" &&
  "$SQ" calibrate "$W/m" --samples 48 --quiet --threads 2 -o "$W/t2.sqc" && cmp -s "$W/t1.sqc" "$W/t2.sqc" &&
  cmp -s "$W/t1.sqc" "$W/a.sqc" && pass "byte-identical at --threads 1 and 2" || fail "thread counts differ"
"$SQ" calibrate "$W/m" --samples 48 --seed 9 --quiet -o "$W/s9.sqc" && ! cmp -s "$W/s9.sqc" "$W/a.sqc" &&
  pass "another seed draws other samples" || fail "--seed has no effect"

# --- observers ---
for obs in minmax percentile:99.9 entropy mse; do
  "$SQ" calibrate "$W/m" --samples 16 --observer $obs --quiet -o "$W/o.sqc" &&
    "$SQ" inspect "$W/o.sqc" | grep -q "observer: ${obs%%:*}" && pass "--observer $obs" || fail "--observer $obs"
done
mm=$("$SQ" inspect "$W/a.sqc" --json --method minmax | python3 -c 'import json,sys; l=json.load(sys.stdin)["layers"][0]; print(l["amax"] == max(abs(l["min"]), abs(l["max"])))')
[[ $mm == True ]] && pass "minmax amax equals max|x|" || fail "minmax amax"

# --- merge ---
"$SQ" calibrate --merge "$W/a.sqc" "$W/s9.sqc" -o "$W/ab.sqc" 2>/dev/null &&
  "$SQ" inspect "$W/ab.sqc" | grep -q "2 run(s)" && pass "merge of two runs" || fail "merge"
"$SQ" calibrate "$W/other" --samples 8 --quiet -o "$W/other.sqc"
# issue 38 item 15: quantize says why a merged .sqc needs --corpus, and runs with it
expect_error "quantize from a merged .sqc names --corpus" "cannot be replayed as one run: quantize replays calibration texts for the activation rows, so pass them with --corpus FILE" "$W/ab.sqm" \
  -- "$SQ" quantize "$W/m" --calib "$W/ab.sqc" -o "$W/ab.sqm"
printf 'the cat sat on the mat\nanother sentence, rather longer than the first one\n' >"$W/replay.txt"
"$SQ" quantize "$W/m" --calib "$W/ab.sqc" --corpus "$W/replay.txt" -o "$W/ab.sqm" >/dev/null 2>&1 && "$SQ" verify "$W/ab.sqm" >/dev/null 2>&1 \
  && pass "quantize from a merged .sqc with --corpus" || fail "quantize merged + --corpus"
expect_error "merge refuses another model" "different models" "$W/bad.sqc" -- "$SQ" calibrate --merge "$W/a.sqc" "$W/other.sqc" -o "$W/bad.sqc"

# --- corpus formats and windows ---
printf 'first calibration sentence\nsecond one, a bit longer than the first\n' > "$W/c.txt"
printf '{"doc":{"body":"alpha beta gamma"}}\n{"doc":{"body":"delta epsilon"}}\n' > "$W/c.jsonl"
"$SQ" calibrate "$W/m" --corpus "$W/c.txt" --quiet -o "$W/txt.sqc" && pass "plain text corpus" || fail "plain text corpus"
"$SQ" calibrate "$W/m" --corpus "$W/c.jsonl" --field doc.body --quiet -o "$W/j.sqc" && pass "JSONL corpus with --field" || fail "JSONL --field"
tar -C "$W" -czf "$W/c.tar.gz" c.txt c.jsonl
expect_error "archive member without the field" "c.jsonl" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --corpus "$W/c.tar.gz" --quiet -o "$W/x.sqc"
tar -C "$W" -czf "$W/c2.tar.gz" c.txt
"$SQ" calibrate "$W/m" --corpus "$W/c2.tar.gz" --quiet -o "$W/tgz.sqc" && pass ".tar.gz corpus" || fail ".tar.gz corpus"
python3 -c 'print(" ".join(["word"] * 300))' > "$W/long.txt"
"$SQ" calibrate "$W/m" --corpus "$W/long.txt" --window --quiet -o "$W/w.sqc" &&
  "$SQ" inspect "$W/w.sqc" | grep -q "1 texts -> 5 sequences" && pass "--window splits a 300-token text into 5 windows" ||
  fail "--window"
if [[ -d "${SQUINT_SHARED_DATA:-/nonexistent}/qasper-subset" ]]; then
  "$SQ" calibrate "$W/m" --corpus "$SQUINT_SHARED_DATA/qasper-subset/allenai-fixture/qasper_sample_small.json" \
    --qasper-parts abstract,questions --quiet -o "$W/q.sqc" && pass "QASPER original-schema corpus" || fail "QASPER corpus"
else
  echo "skip - QASPER corpus test (SQUINT_SHARED_DATA not set)"
fi

# --- bad inputs ---
: > "$W/empty.txt"
expect_error "empty corpus" "no samples" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --corpus "$W/empty.txt" -o "$W/x.sqc"
expect_error "missing field" "field \"nope\"" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --corpus "$W/c.jsonl" --field nope -o "$W/x.sqc"
head -c 100 "$W/c.tar.gz" > "$W/cut.tar.gz"
expect_error "corrupt archive" "cut.tar.gz" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --corpus "$W/cut.tar.gz" -o "$W/x.sqc"
head -c 4096 /dev/urandom > "$W/garbage.txt"
expect_error "binary garbage" "garbage.txt" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --corpus "$W/garbage.txt" -o "$W/x.sqc"
expect_error "missing corpus file" "nope.txt" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --corpus "$W/nope.txt" -o "$W/x.sqc"
expect_error "unknown observer" "unknown calibration method" "$W/x.sqc" -- "$SQ" calibrate "$W/m" --observer kl -o "$W/x.sqc"
expect_error "no -o" "-o OUT.sqc is required" "" -- "$SQ" calibrate "$W/m"
head -c 3000 "$W/a.sqc" > "$W/trunc.sqc"
expect_error "truncated .sqc" "trunc.sqc" "$W/x.sqc" -- "$SQ" calibrate --merge "$W/trunc.sqc" "$W/a.sqc" -o "$W/x.sqc"
expect_error "inspect truncated .sqc" "trunc.sqc" "" -- "$SQ" inspect "$W/trunc.sqc"
cp "$W/a.sqc" "$W/flip.sqc"
size=$(stat -c %s "$W/flip.sqc")
printf '\x55' | dd of="$W/flip.sqc" bs=1 seek=$((size - 5000)) conv=notrunc 2>/dev/null
expect_error "corrupted byte in .sqc" "flip.sqc" "" -- "$SQ" inspect "$W/flip.sqc"
expect_error "not a squint file" "c.txt" "" -- "$SQ" inspect "$W/c.txt"
echo keep > "$W/keep.sqc"
"$SQ" calibrate "$W/m" --corpus "$W/empty.txt" -o "$W/keep.sqc" 2>/dev/null
[[ $(cat "$W/keep.sqc") == keep ]] && pass "failed run leaves existing output untouched" || fail "existing output clobbered"

finish
