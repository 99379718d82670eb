#!/usr/bin/env bash
# End-to-end tests of `squint quantize` with verify / diff / inspect of the
# .sqm: plan, determinism across threads, SmoothQuant lowering the error on
# planted outliers, int8 vs int4, compression, strict overrides, bad inputs.
# usage: test_quantize.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-quant-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
export SOURCE_DATE_EPOCH=1764633600

"$GEN" "$W/m" --shape tiny --seed 7 --outliers 2 >/dev/null || exit 1
"$GEN" "$W/other" --shape tiny --seed 8 >/dev/null || exit 1
"$SQ" calibrate "$W/m" --samples 64 --quiet -o "$W/m.sqc" 2>/dev/null || { echo "calibrate failed"; exit 1; }
"$SQ" calibrate "$W/other" --samples 8 --quiet -o "$W/other.sqc" 2>/dev/null

cat > "$W/int4.yaml" <<'YAML'
weights:
  type: int4-g128
YAML
cat > "$W/unmatched.yaml" <<'YAML'
overrides:
  - match: "layer.99.*"
    type: fp32
YAML
cat > "$W/bad.yaml" <<'YAML'
smoothquant:
  alpah: 0.5
YAML

# --- plan ---
"$SQ" quantize "$W/m" --dry-run > "$W/plan.txt" 2>/dev/null && [[ $(grep -c "layer\." "$W/plan.txt") -eq 8 ]] &&
  [[ ! -e "$W/x.sqm" ]] && pass "--dry-run lists the 8 linears and writes nothing" || fail "--dry-run"
"$SQ" quantize "$W/m" --dry-run --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["dry_run"] and len(d["linears"]) == 8' &&
  pass "--dry-run --json" || fail "--dry-run --json"

# --- build, determinism ---
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/t1.sqm" --threads 1 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/t2.sqm" --threads 2 2>/dev/null &&
  cmp -s "$W/t1.sqm" "$W/t2.sqm" && pass "byte-identical .sqm at --threads 1 and 2" || fail "thread counts differ"
"$SQ" verify "$W/t1.sqm" >/dev/null && pass "verify OK" || fail "verify of a good file"
"$SQ" diff "$W/t1.sqm" "$W/t2.sqm" >/dev/null; [[ $? -eq 0 ]] && pass "diff of identical builds exits 0" || fail "diff identical"
"$SQ" inspect "$W/t1.sqm" >/dev/null && pass "inspect .sqm" || fail "inspect .sqm"

# --- the .sqm carries the tokenizer: same ids as the checkpoint directory ---
{
  printf 'Hello, World! naïve café\n東京 [MASK] tokenization\n\tcontrol\x01chars   and   spaces\n'
  if [[ -f "${SQUINT_SHARED_DATA:-/nonexistent}/stsb-glue/dev.tsv" ]]; then
    tail -n +2 "$SQUINT_SHARED_DATA/stsb-glue/dev.tsv" | cut -f8,9 | tr '\t' '\n'
  fi
} > "$W/tok.txt"
"$SQ" tokenize "$W/m" --input "$W/tok.txt" > "$W/tok_dir.jsonl" &&
  "$SQ" tokenize "$W/t1.sqm" --input "$W/tok.txt" > "$W/tok_sqm.jsonl" &&
  cmp -s "$W/tok_dir.jsonl" "$W/tok_sqm.jsonl" &&
  pass "tokenizer from the .sqm gives the checkpoint's ids ($(wc -l < "$W/tok.txt") texts)" || fail "tokenizer from .sqm"

# --- SmoothQuant lowers the int8 error where the outliers are ---
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/j.sqm" --json > "$W/q.json" 2>/dev/null &&
  python3 - "$W/q.json" <<'PY' && pass "SmoothQuant lowers the output error of the linears reading outlier channels, and in total" || fail "SmoothQuant error"
import json, sys
d = json.load(open(sys.argv[1]))
sm = [l for l in d["linears"] if l["smooth"]]
assert sm, "no smoothed linear"
for l in sm:
    print("   %s: err %.4f vs %.4f without smoothing (%.1fx)" % (l["name"], l["err"], l["err_nosmooth"], l["err_nosmooth"] / l["err"]))
# Layer 0 reads the embedding LayerNorm's outlier channels (the fixture's
# --outliers); a later input without outliers may lose a little.
for l in sm:
    if l["name"].startswith("layer.0."):
        assert l["err"] < l["err_nosmooth"] / 1.3, l
assert sum(l["err"] for l in sm) < sum(l["err_nosmooth"] for l in sm)
PY

cat > "$W/auto.yaml" <<'YAML'
smoothquant:
  alpha: auto
YAML
"$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/auto.yaml" -o "$W/auto.sqm" --json > "$W/qa.json" 2>/dev/null &&
  python3 - "$W/qa.json" <<'PY' && pass "SmoothQuant alpha auto lowers the output error of the linears reading outlier channels, and in total" || fail "alpha auto"
import json, sys
d = json.load(open(sys.argv[1]))
sm = [l for l in d["linears"] if l["smooth"]]
assert sm
for l in sm:
    print("   %s: auto alpha %.2f, err %.4f vs %.4f without smoothing (%.1fx)" % (l["name"], l["alpha"], l["err"], l["err_nosmooth"], l["err_nosmooth"] / l["err"]))
    assert 0 <= l["alpha"] <= 1, l
    if l["name"].startswith("layer.0."):
        assert l["err"] < l["err_nosmooth"] / 1.3, l
assert sum(l["err"] for l in sm) < sum(l["err_nosmooth"] for l in sm)
PY

# --- int4 and diff ---
"$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/int4.yaml" -o "$W/i4.sqm" 2>/dev/null && pass "int4-g128 build" || fail "int4 build"
out=$("$SQ" diff "$W/t1.sqm" "$W/i4.sqm" 2>&1); rc=$?
[[ $rc -eq 1 && "$out" == *dB* ]] && pass "diff int8 vs int4 exits 1 and shows SQNR" || fail "diff int8/int4: rc $rc"
[[ $(stat -c %s "$W/i4.sqm") -lt $(stat -c %s "$W/t1.sqm") ]] && pass "int4 file is smaller" || fail "int4 size"
printf 'Hello world!\nThe int4 build runs too.\n' > "$W/run.txt"
for b in t1 i4; do
  "$SQ" embed-run "$W/$b.sqm" --input "$W/run.txt" --reference "$W/m" --gate cos_mean=0.99 --quiet >/dev/null 2>&1 &&
    pass "$b.sqm runs and stays within cos_mean 0.99 of fp32" || fail "$b.sqm embed-run"
done

# --- compression ---
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/z.sqm" --compress 2>/dev/null && "$SQ" verify "$W/z.sqm" >/dev/null &&
  "$SQ" diff "$W/z.sqm" "$W/t1.sqm" >/dev/null && pass "--compress: verify and diff read it transparently" || fail "--compress"

# --- every flipped byte is caught ---
size=$(stat -c %s "$W/t1.sqm")
bad=0 named=0
for i in $(seq 1 25); do
  pos=$(( (i * 2654435761) % size ))
  cp "$W/t1.sqm" "$W/flip.sqm"
  orig=$(dd if="$W/flip.sqm" bs=1 skip=$pos count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
  printf "$(printf '\\%03o' $(( (orig ^ 0x5a) & 255 )))" | dd of="$W/flip.sqm" bs=1 seek=$pos conv=notrunc 2>/dev/null
  msg=$("$SQ" verify "$W/flip.sqm" 2>&1); rc=$?
  [[ $rc -eq 1 && "$msg" =~ (tensor\ \"|metadata|directory|header|trailer|padding) ]] ||
    { bad=$((bad + 1)); echo "   byte $pos: rc $rc, '$msg'"; }
  [[ "$msg" == *'tensor "'* ]] && named=$((named + 1))
done
[[ $bad -eq 0 && $named -gt 15 ]] && pass "verify exits 1 naming the damaged part on 25 single-byte flips ($named named a tensor)" ||
  fail "$bad flips undetected or unnamed"

# --- bad inputs ---
expect_rc "stats of another model" 2 "different model" "$W/x.sqm" -- "$SQ" quantize "$W/m" --calib "$W/other.sqc" -o "$W/x.sqm"
expect_rc "unknown recipe key" 2 "bad.yaml:2:3" "$W/x.sqm" -- "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/bad.yaml" -o "$W/x.sqm"
expect_rc "--strict unmatched override" 1 "layer.99" "$W/x.sqm" -- "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/unmatched.yaml" --strict -o "$W/x.sqm"
"$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/unmatched.yaml" -o "$W/w.sqm" 2>"$W/warn.txt" &&
  grep -q "warning" "$W/warn.txt" && pass "unmatched override without --strict warns" || fail "unmatched override warning"
head -c 5000 "$W/m.sqc" > "$W/trunc.sqc"
expect_rc "truncated .sqc" 2 "trunc.sqc" "$W/x.sqm" -- "$SQ" quantize "$W/m" --calib "$W/trunc.sqc" -o "$W/x.sqm"
# An output that is one of the command's own inputs is refused, the input untouched.
cp "$W/m.sqc" "$W/own.sqc"; cp "$W/m/model.safetensors" "$W/weights.keep"
expect_error "-o is the --calib input" "is also an input" "" -- "$SQ" quantize "$W/m" --calib "$W/own.sqc" -o "$W/own.sqc"
cmp -s "$W/m.sqc" "$W/own.sqc" && pass "the .sqc is untouched" || fail "the .sqc was replaced"
expect_error "-o is the model's weights" "is also an input" "" -- "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m/model.safetensors"
cmp -s "$W/m/model.safetensors" "$W/weights.keep" && pass "the weights are untouched" || fail "the weights were replaced"
expect_error "calibrate --merge onto one of its inputs" "is also an input" "" -- "$SQ" calibrate --merge "$W/m.sqc" "$W/own.sqc" -o "$W/own.sqc"
expect_rc "quantize refuses a .sqm" 2 "already a packed model" "$W/x.sqm" -- "$SQ" quantize "$W/t1.sqm" -o "$W/x.sqm"
expect_rc "calibrate refuses a .sqm" 2 "packed model" "$W/x.sqc" -- "$SQ" calibrate "$W/t1.sqm" -o "$W/x.sqc"
expect_rc "missing -o" 2 "-o OUT.sqm" "" -- "$SQ" quantize "$W/m" --calib "$W/m.sqc"
expect_rc "unwritable output" 2 "$W/nodir/x.sqm" "$W/nodir/x.sqm" -- "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/nodir/x.sqm"

finish
