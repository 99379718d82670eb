#!/usr/bin/env bash
# Worst-case accuracy on a fixture that behaves like a trained encoder
# (issue: "no input may break"), and gates that can fail:
#   1. the bge-small-shaped fixture with outliers (squint-gen-fixture
#      --outliers 2: LayerNorm outlier dims, token-specific massive FFN
#      activations) gives embeddings that depend on the input (200 STS-B
#      sentences: mean pairwise cosine <= 0.9), hidden rows of different
#      tokens differ, and its massive units are the top channels of the
#      upper layers' ffn_down input;
#   2. built as squint did before the fixes (observer.guard: clip and
#      outliers.enabled: false) it fails the shipped bge-small recipe's
#      cos_min gate on 300 STS-B sentences; with the defaults (guard row,
#      outlier channels in fp32) it passes every gate of that recipe;
#   3. embed-run reports the worst inputs, percentiles, the centred cosine
#      and per linear the values and rows beyond the calibrated range.
# usage: test_worst_case.sh SQUINT GEN_FIXTURE   (needs SQUINT_SHARED_DATA)
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-worst-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
export SOURCE_DATE_EPOCH=1764633600
D=${SQUINT_SHARED_DATA:-/nonexistent}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
if [[ ! -f "$D/stsb-glue/original/sts-dev.tsv" || ! -f "$D/bge-small-en-v1.5/vocab.txt" ]]; then
  echo "SKIPPED: worst-case tests need STS-B and the bge vocabulary in SQUINT_SHARED_DATA"
  exit 77
fi
PY=/usr/bin/python3
cut -f6 "$D/stsb-glue/original/sts-dev.tsv" | head -200 >"$W/s200.txt"
cut -f6,7 "$D/stsb-glue/original/sts-dev.tsv" | tr '\t' '\n' | head -300 >"$W/s300.txt"
"$GEN" "$W/m" --shape bge-small --vocab "$D/bge-small-en-v1.5/vocab.txt" --outliers 2 >"$W/gen.txt" ||
  { echo "fixture generation failed"; exit 1; }

# --- 1. the fixture carries signal and the outlier mechanisms ---
"$SQ" embed "$W/m" --input "$W/s200.txt" --output "$W/e.npy" --hidden-output "$W/h.npy" \
  --tokens-output "$W/t.jsonl" 2>/dev/null || fail "fp32 embed"
$PY - "$W/e.npy" "$W/h.npy" "$W/t.jsonl" <<'PYX' && pass "embeddings depend on the input, token rows differ" || fail "fixture signal"
import sys, json, numpy as np
e = np.load(sys.argv[1]).astype(np.float64); e /= np.linalg.norm(e, axis=1, keepdims=True)
c = e @ e.T; iu = np.triu_indices(len(e), 1)
print(f"   200 STS-B sentences: mean pairwise cosine {c[iu].mean():.3f} (min {c[iu].min():.3f})")
assert c[iu].mean() <= 0.9
h = np.load(sys.argv[2]).astype(np.float64)
ids = [i for l in open(sys.argv[3]) for i in json.loads(l)["ids"]]
assert len(ids) == len(h)
# one row per distinct token id, then their pairwise cosine
first = {}
for r, i in enumerate(ids):
    first.setdefault(i, r)
rows = h[sorted(first.values())]; rows /= np.linalg.norm(rows, axis=1, keepdims=True)
t = rows @ rows.T; ju = np.triu_indices(len(rows), 1)
print(f"   {len(rows)} distinct tokens: hidden rows' mean pairwise cosine {t[ju].mean():.3f}, max {t[ju].max():.4f}")
assert t[ju].mean() <= 0.95 and t[ju].max() < 0.9999
PYX
"$SQ" calibrate "$W/m" --corpus "$W/s200.txt" --quiet -o "$W/stsb.sqc" 2>/dev/null &&
  "$SQ" inspect "$W/stsb.sqc" --json --top 2 >"$W/sqc.json" || fail "calibrate on STS-B"
$PY - "$W/sqc.json" <<'PYX' && pass "outlier dims in the LayerNorm outputs; massive units top the upper layers' ffn_down input" || fail "outlier mechanisms"
import sys, json
d = json.load(open(sys.argv[1]))
L = max(x["layer"] for x in d["layers"]) + 1
qkv0 = [x for x in d["layers"] if x["layer"] == 0 and x["input"] == "qkv"][0]
print(f"   layer 0 qkv input: max/median {qkv0['max_over_median']:.1f}")
assert qkv0["max_over_median"] >= 5
for x in d["layers"]:
    if x["input"] == "ffn_down" and x["layer"] == L // 2:
        top = x["top_channels"][0]
        print(f"   layer {x['layer']} ffn_down input: top unit {top['channel']} at {top['max_abs']:.1f}, clip {x['amax']:.2f}")
        assert top["channel"] in (0, 1) and top["max_abs"] > 1.3 * x["amax"]
PYX

# --- 2. a gate that can fail ---
"$SQ" calibrate "$W/m" --samples 128 --quiet -o "$W/m.sqc" 2>/dev/null || fail "calibrate"
sed -e 's/^  percentile: 99.99$/  percentile: 99.99\n  guard: clip/' \
    -e '/^outliers:/,/^[a-z]/ s/^  enabled: true/  enabled: false/' "$SRC/recipes/bge-small-en-v1.5.yaml" >"$W/clip.yaml"
grep -q "guard: clip" "$W/clip.yaml" && grep -q "enabled: false" "$W/clip.yaml" ||
  fail "could not derive the recipe of squint before the fixes (guard clip, no outlier channels)"
"$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$SRC/recipes/bge-small-en-v1.5.yaml" -o "$W/row.sqm" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/clip.yaml" -o "$W/clip.sqm" 2>/dev/null ||
  { fail "quantize"; finish; exit 1; }
"$SQ" inspect "$W/row.sqm" >"$W/inspect.txt" && grep -q "activations: guard row" "$W/inspect.txt" &&
  pass "inspect shows the guard" || fail "inspect guard"
"$SQ" inspect "$W/row.sqm" --json >"$W/inspect.json" && $PY - "$W/inspect.json" <<'PYX' &&
import json, sys
lin = {l["name"]: l["outlier_channels"] for l in json.load(open(sys.argv[1]))["linears"]}
# the LayerNorm outlier dims feed layer 0's qkv; the massive units the upper ffn_down
assert len(lin["layer.0.qkv"]) >= 2 and len(lin["layer.11.ffn_down"]) >= 1, lin
print("   outlier channels in fp32: layer.0.qkv %s, layer.11.ffn_down %s, %d linears with some"
      % (lin["layer.0.qkv"], lin["layer.11.ffn_down"], sum(1 for v in lin.values() if v)))
PYX
  pass "inspect shows the outlier channels the quantizer kept in fp32" || fail "inspect outlier channels"
"$SQ" embed-run "$W/clip.sqm" --input "$W/s300.txt" --reference "$W/m" \
  --recipe "$SRC/recipes/bge-small-en-v1.5.yaml" --report "$W/clip.json" --quiet >"$W/clip.txt" 2>"$W/clip.err"
rc=$?
cat "$W/clip.txt" | sed 's/^/   clip: /' | head -9
[[ $rc -eq 1 ]] && grep -q "cos_min" "$W/clip.err" && pass "squint before the fixes fails the shipped recipe's cos_min gate (exit 1)" ||
  fail "guard clip, no outlier channels: exit $rc, want 1 naming cos_min ($(cat "$W/clip.err"))"
"$SQ" embed-run "$W/row.sqm" --input "$W/s300.txt" --reference "$W/m" \
  --recipe "$SRC/recipes/bge-small-en-v1.5.yaml" --report "$W/row.json" --quiet >"$W/row.txt" 2>"$W/row.err"
rc=$?
cat "$W/row.txt" | sed 's/^/   row:  /' | head -9
[[ $rc -eq 0 ]] && pass "the default guard passes every gate of the shipped recipe" ||
  fail "guard row: exit $rc ($(cat "$W/row.err"))"

# --- 3. the report carries the worst cases ---
$PY - "$W/clip.json" "$W/row.json" <<'PYX' && pass "report: worst inputs, percentiles, centred cosine, values and rows beyond range" || fail "report contents"
import sys, json
for f in sys.argv[1:]:
    r = json.load(open(f)); c = r["metrics"]["cosine"]
    assert len(c["worst"]) == 10 and c["worst"][0]["cosine"] == c["min"] and c["worst"][0]["text"]
    assert c["min"] <= c["p001"] <= c["p01"] <= c["mean"]
    assert -1 <= c["centred"]["min"] <= c["centred"]["mean"] <= 1
    ce = r["metrics"]["clip_exceed"]
    assert len(ce) == 48 and all(x["beyond"] <= x["values"] and x["rows_beyond"] <= x["rows"] for x in ce)
    assert sum(x["rows_beyond"] for x in ce) > 0
    assert {x["guard"] for x in ce} == ({"clip"} if "clip" in f else {"row"})
clip, row = (json.load(open(f))["metrics"]["cosine"] for f in sys.argv[1:])
print(f"   cos min {clip['min']:.4f} -> {row['min']:.4f}, centred min {clip['centred']['min']:.3f} -> {row['centred']['min']:.3f}")
assert row["min"] > clip["min"] and row["centred"]["mean"] > clip["centred"]["mean"]
PYX
finish
