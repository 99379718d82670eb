#!/usr/bin/env bash
# End-to-end tests of `squint embed-run`: a tiny fixture's .sqm against its
# fp32 checkpoint on plain text; gates that pass (exit 0) and fail (exit 1,
# naming the gate); the JSON report; STS-B / SST-2 / SciFact on the shared
# data when SQUINT_SHARED_DATA is set; bad inputs (exit 2, no output left).
# Fixture weights are random: only fp32-vs-int8 differences mean anything,
# never the absolute task figures.
# usage: test_embed_run.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-embedrun-XXXXXX)
trap 'rm -rf "$W"' EXIT
export SOURCE_DATE_EPOCH=1764633600
fails=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; fails=$((fails + 1)); }
# NAME WANT_RC NEEDLE(stdout+stderr) -- command...
expect() {
  local name=$1 want=$2 needle=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]]; then fail "$name: exit $rc, want $want ($out)"; return; fi
  if [[ "$out" != *"$needle"* ]]; then fail "$name: output lacks '$needle': $out"; return; fi
  pass "$name"
}

"$GEN" "$W/m" --shape tiny --seed 7 --outliers 2 >/dev/null || exit 1
"$SQ" calibrate "$W/m" --samples 32 --quiet -o "$W/m.sqc" 2>/dev/null || { echo "calibrate failed"; exit 1; }
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>&1 || { echo "quantize failed"; exit 1; }
printf '%s\n' "the cat sat on the mat" "a dog runs in the park" "quantized models run fast" \
  "embeddings map text to vectors" "hello world" "int8 weights and activations" \
  "the quick brown fox" "post-training quantization" "sentence similarity" "one more line" \
  "a twelfth text" "and the last one" > "$W/texts.txt"

# Without --reference: embeddings like `squint embed`.
"$SQ" embed-run "$W/m.sqm" --input "$W/texts.txt" --output "$W/q.npy" --quiet
"$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/e.npy" --quiet
if cmp -s "$W/q.npy" "$W/e.npy"; then pass "no reference: same .npy as embed"; else fail "no reference: .npy differs from embed"; fi
n=$("$SQ" embed-run "$W/m.sqm" --input "$W/texts.txt" --quiet | wc -l)
[[ $n -eq 12 ]] && pass "no reference: JSONL on stdout" || fail "no reference: $n JSONL lines, want 12"

# Gates that pass.
expect "gates pass" 0 "gate cos_mean" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
  --input "$W/texts.txt" --gate cos_mean=0.9,cos_min=0.5 --gate topk_overlap=0 --report "$W/r.json" --quiet
/usr/bin/python3 - "$W/r.json" <<'PY' && pass "report parses" || fail "report JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["task"] == "plain" and r["counts"]["texts"] == 12, r
assert r["model"]["kind"] == "sqm" and r["reference"]["kind"] == "checkpoint"
c = r["metrics"]["cosine"]
assert 0.9 <= c["min"] <= c["p01"] <= c["mean"] <= 1.0 + 1e-9, c
assert r["metrics"]["topk_overlap"]["k"] == 10
assert [g["name"] for g in r["gates"]] == ["cos_mean", "cos_min", "topk_overlap"]
assert r["pass"] is True and all(g["pass"] for g in r["gates"])
assert r["isa"] and r["seconds"]["total"] > 0
PY
# The model against itself: cosine 1, overlap 1.
expect "self: overlap 1" 0 "overlap 1.0000" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m.sqm" \
  --input "$W/texts.txt" --gate cos_min=0.999999,topk_overlap=1 --topk 3 --quiet

# Gates that fail name the gate and exit 1; the report still records them.
expect "gate fails" 1 "gate failed: cos_mean" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
  --input "$W/texts.txt" --gate cos_mean=1,cos_min=0.5 --report "$W/r2.json" --quiet
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['pass'] is False" "$W/r2.json" \
  && pass "failing report" || fail "failing report"
expect "unmeasurable gate fails" 1 "stsb_spearman_drop" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
  --input "$W/texts.txt" --gate stsb_spearman_drop=0.5 --quiet
cat > "$W/gates.yaml" <<'YAML'
gates:
  cos_mean: 0.5
  ndcg10_drop: 0.1
YAML
expect "recipe gates (--gate overrides)" 1 "cannot be measured" -- "$SQ" embed-run "$W/m.sqm" \
  --reference "$W/m" --input "$W/texts.txt" --recipe "$W/gates.yaml" --gate cos_mean=0.9 --quiet

# Labelled sets on the shared data.
D=${SQUINT_SHARED_DATA:-}
if [[ -n "$D" && -d "$D/stsb-glue" ]]; then
  expect "stsb" 0 "Spearman" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
    --input "$D/stsb-glue/original/sts-test.tsv" --limit 60 --gate stsb_spearman_drop=1 --quiet
  expect "sst2" 0 "probe" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
    --input "$D/sst2-glue/dev.tsv" --limit 60 --report "$W/s.json" --quiet
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); a=r['metrics']['sst2']['probe_accuracy']; assert 0<=a['model']<=1 and 0<=a['reference']<=1" "$W/s.json" \
    && pass "sst2 report" || fail "sst2 report"
  expect "scifact" 0 "nDCG@10" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
    --input "$D/scifact/beir-format" --limit 80 --gate ndcg10_drop=1 --quiet
  expect "glue test.tsv has no scores" 2 "no 'score' column" -- "$SQ" embed-run "$W/m.sqm" \
    --reference "$W/m" --input "$D/stsb-glue/test.tsv" --quiet
else
  echo "skip - stsb/sst2/scifact: SQUINT_SHARED_DATA not set"
fi

# Bad input: exit 2, nothing left behind.
printf 'sentence1\tsentence2\tscore\na\tb\tfive\n' > "$W/bad.tsv"
expect "bad tsv" 2 "bad.tsv:2:" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" --input "$W/bad.tsv" \
  --report "$W/bad.json" --quiet
[[ -e "$W/bad.json" ]] && fail "bad tsv left a report" || pass "no report on bad input"
expect "missing input" 2 "nope.txt" -- "$SQ" embed-run "$W/m.sqm" --input "$W/nope.txt" --quiet
expect "missing model" 2 "nomodel" -- "$SQ" embed-run "$W/nomodel.sqm" --input "$W/texts.txt" --quiet
expect "unknown gate" 2 "unknown gate" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
  --input "$W/texts.txt" --gate cos_man=0.9
expect "gate out of range" 2 "cos_mean" -- "$SQ" embed-run "$W/m.sqm" --reference "$W/m" \
  --input "$W/texts.txt" --gate cos_mean=2
expect "gate without reference" 2 "needs --reference" -- "$SQ" embed-run "$W/m.sqm" \
  --input "$W/texts.txt" --gate cos_mean=0.9
expect "bad task" 2 "--task" -- "$SQ" embed-run "$W/m.sqm" --input "$W/texts.txt" --task nope
expect "no input" 2 "--input" -- "$SQ" embed-run "$W/m.sqm"

# The default thread count follows the CPU affinity and OMP_NUM_THREADS
# (the report records it); --threads still wins.
threads_of() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['threads'])" "$1"; }
run_t() { "$@" --reference "$W/m" --input "$W/texts.txt" --report "$W/t.json" --quiet >/dev/null 2>&1; threads_of "$W/t.json"; }
[[ $(run_t taskset -c 0 "$SQ" embed-run "$W/m.sqm") == 1 ]] && pass "taskset -c 0: 1 thread" || fail "taskset ignored"
[[ $(OMP_NUM_THREADS=1 run_t "$SQ" embed-run "$W/m.sqm") == 1 ]] && pass "OMP_NUM_THREADS=1: 1 thread" || fail "OMP_NUM_THREADS ignored"
[[ $(OMP_NUM_THREADS=1 run_t "$SQ" embed-run "$W/m.sqm" --threads 3) == 3 ]] && pass "--threads wins" || fail "--threads lost"

if ls "$W"/*.tmp.* >/dev/null 2>&1; then fail "temp files left"; fi
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
