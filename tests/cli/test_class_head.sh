#!/usr/bin/env bash
# A classification head stored in the .sqm (quantize --head, formats/SQM.md
# section 9) and heads as safetensors (formats/HEAD.md), on the tiny
# fixture: classify with the stored head = classify with --head (JSON and
# safetensors), byte for byte; inspect / verify / diff see it; a head of
# another width refused; no head: a clear message; hostile safetensors
# heads refused (exit 2, named); serve's POST /classify with the stored
# head; embed-run's head accuracy and its max_accuracy_drop gate, passing
# and failing.
# usage: test_class_head.sh SQUINT GEN_FIXTURE SQM_POKE
set -uo pipefail
SQ=$1
GEN=$2
POKE=$3
W=$(mktemp -d /tmp/squint-class-head-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"' EXIT
source "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
export SQUINT_WRITE_CHECK=1 # the writer's strict schema self-check

"$GEN" "$W/m" --shape tiny --seed 5 >/dev/null &&
  "$GEN" "$W/other" --shape tiny --seed 6 >/dev/null &&
  "$GEN" "$W/wide" --shape tiny --seed 6 --hidden 48 >/dev/null &&
  "$SQ" calibrate "$W/m" --samples 32 --quiet -o "$W/m.sqc" 2>/dev/null &&
  "$SQ" calibrate "$W/other" --samples 32 --quiet -o "$W/other.sqc" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>&1 ||
  { echo "FAIL - fixture"; exit 1; }

# SST-2 layout: two classes the fixture tells apart; texts to classify.
{
  printf 'sentence\tlabel\n'
  for w in dog cat bird fox; do
    for v in lazy quick small; do
      printf 'the %s %s and the animal\t1\nthe %s computer and the network\t0\n' "$v" "$w" "$v"
    done
  done
} >"$W/sst.tsv"
printf 'the dog\nthe computer network\nhello\n\nthe quick brown fox\n' >"$W/in.txt"

"$SQ" train-head "$W/m" --train "$W/sst.tsv" --quiet -o "$W/h.json" &&
  "$SQ" train-head "$W/m" --train "$W/sst.tsv" --quiet -o "$W/h.safetensors" &&
  "$SQ" train-head "$W/m" --train "$W/sst.tsv" --quiet --threads 2 -o "$W/h2.safetensors" ||
  { echo "FAIL - train-head"; exit 1; }
if cmp -s "$W/h.safetensors" "$W/h2.safetensors"; then
  pass "train-head -o .safetensors: the same bytes at --threads 1 and 2"; else fail "safetensors head determinism"; fi
if $PY - "$W/h.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
m = h["__metadata__"]
assert m["format"] == "squint-head" and m["version"] == "1" and m["kind"] == "softmax-linear", m
assert json.loads(m["labels"]) == ["0", "1"] and m["normalized"] in ("true", "false"), m
assert h["weight"]["dtype"] == "F64" and h["weight"]["shape"] == [2, 32], h
assert h["bias"]["dtype"] == "F64" and h["bias"]["shape"] == [2], h
assert json.loads(m["training"])["rows_used"] == 24, m
PY
then pass "safetensors head: F64 weight [2, 32], bias [2], metadata"; else fail "safetensors head layout"; fi

# quantize --head: stored; classify without --head = with it, byte for byte.
"$SQ" quantize "$W/m" --calib "$W/m.sqc" --head "$W/h.json" -o "$W/mh.sqm" >/dev/null 2>&1 ||
  fail "quantize --head"
"$SQ" classify "$W/mh.sqm" --input "$W/in.txt" --quiet >"$W/stored.jsonl"; r1=$?
"$SQ" classify "$W/mh.sqm" --head "$W/h.json" --input "$W/in.txt" --quiet >"$W/json.jsonl"; r2=$?
"$SQ" classify "$W/mh.sqm" --head "$W/h.safetensors" --input "$W/in.txt" --quiet >"$W/st.jsonl"; r3=$?
if [[ $r1$r2$r3 == 000 && -s $W/stored.jsonl ]] && cmp -s "$W/stored.jsonl" "$W/json.jsonl" &&
  cmp -s "$W/stored.jsonl" "$W/st.jsonl"; then
  pass "classify: stored head = --head JSON = --head safetensors, byte for byte"
else fail "classify stored vs --head ($r1 $r2 $r3)"; fi
"$SQ" classify "$W/m" --head "$W/h.json" --input "$W/in.txt" --quiet >"$W/fj.jsonl"
"$SQ" classify "$W/m" --head "$W/h.safetensors" --input "$W/in.txt" --quiet >"$W/fs.jsonl"
if [[ -s $W/fj.jsonl ]] && cmp -s "$W/fj.jsonl" "$W/fs.jsonl"; then
  pass "fp32 checkpoint: JSON and safetensors heads classify the same"; else fail "JSON vs safetensors on fp32"; fi
# The file is the plain one plus the head: the same weights, two tensors more.
"$SQ" diff "$W/m.sqm" "$W/mh.sqm" >"$W/diff.txt" 2>&1; drc=$?
if [[ $drc -le 1 ]] && grep -q "only in B: class_head.weight (f64 \[2, 32\])" "$W/diff.txt" &&
  grep -q "61 equal, 0 differ" "$W/diff.txt"; then
  pass "diff: the head's two tensors and metadata, every other tensor equal"; else fail "diff ($drc): $(cat "$W/diff.txt")"; fi
if "$SQ" verify "$W/mh.sqm" >/dev/null 2>&1; then pass "verify passes a file with a head"; else fail "verify"; fi
if "$SQ" inspect "$W/mh.sqm" | grep -q "class head:  2 labels x 32 (softmax-linear, normalized embeddings), from $W/h.json (xxh64 [0-9a-f]\{16\}): 0, 1"; then
  pass "inspect: the head in text"; else fail "inspect text: $("$SQ" inspect "$W/mh.sqm" | grep -i 'class')"; fi
if "$SQ" inspect "$W/mh.sqm" --json | $PY -c '
import json, sys
c = json.load(sys.stdin)["class_head"]
assert c["labels"] == ["0", "1"] and c["classes"] == 2 and c["dim"] == 32 and c["normalized"] is True, c
assert len(c["xxh64"]) == 16, c'; then pass "inspect --json: class_head"; else fail "inspect json"; fi
# The same inputs, the same file.
"$SQ" quantize "$W/m" --calib "$W/m.sqc" --head "$W/h.json" -o "$W/mh2.sqm" >/dev/null 2>&1
if cmp -s "$W/mh.sqm" "$W/mh2.sqm"; then pass "quantize --head: deterministic bytes"; else fail "quantize --head determinism"; fi

# A forged file (checksums recomputed): a NaN in the stored weights.
# (the high word of weight 0 set to 0x7ff80000: a double NaN)
"$POKE" "$W/mh.sqm" "$W/nan.sqm" class_head.weight 1 --set-i32 2146959360 >/dev/null 2>&1
"$SQ" verify "$W/nan.sqm" >"$W/v.txt" 2>&1; vrc=$?
if [[ $vrc -eq 1 ]] && grep -q 'tensor "class_head.weight": entry 0 is nan, not finite' "$W/v.txt"; then
  pass "verify: a NaN in class_head.weight, named"; else fail "verify NaN head ($vrc): $(cat "$W/v.txt")"; fi
expect_error "classify: a NaN in the stored head" 'nan.sqm: tensor "class_head.weight": entry 0 is nan' "$W/o.jsonl" -- \
  "$SQ" classify "$W/nan.sqm" --input "$W/in.txt" --output "$W/o.jsonl"

# Refusals: another width; no head anywhere.
expect_error "quantize --head of another width" \
  "$W/h.json: the head is for 32-dimensional embeddings, but $W/wide gives 48" "$W/wide.sqm" -- \
  "$SQ" quantize "$W/wide" --head "$W/h.json" -o "$W/wide.sqm"
expect_error "classify a checkpoint without --head" "$W/m is not a .sqm, so it carries no classification head" "$W/o.jsonl" -- \
  "$SQ" classify "$W/m" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "classify a .sqm without a stored head" "$W/m.sqm has no classification head stored: give --head" "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --input "$W/in.txt" --output "$W/o.jsonl"

# Hostile safetensors heads: exit 2, the file and the problem named.
$PY - "$W/h.safetensors" "$W" <<'PY'
import json, struct, sys
src, w = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr, data = json.loads(b[8:8 + n]), b[8 + n:]
def write(name, h, d):
    j = json.dumps(h).encode()
    open(f"{w}/{name}", "wb").write(struct.pack("<Q", len(j)) + j + d)
def tensors(h):
    return {k: v for k, v in h.items() if k != "__metadata__"}
# F16 weight (dtype refused)
h = json.loads(json.dumps(hdr)); h["weight"]["dtype"] = "F16"
s, e = h["weight"]["data_offsets"]; h["weight"]["data_offsets"] = [s, s + (e - s) // 4]
write("f16.safetensors", h, data)
# NaN in the weights
off = hdr["weight"]["data_offsets"][0] + 8 * 5
write("nan.safetensors", hdr, data[:off] + struct.pack("<d", float("nan")) + data[off + 8:])
# three labels for two rows
h = json.loads(json.dumps(hdr)); h["__metadata__"]["labels"] = json.dumps(["0", "1", "2"])
write("shape.safetensors", h, data)
# no labels
h = json.loads(json.dumps(hdr)); del h["__metadata__"]["labels"]
write("nolabels.safetensors", h, data)
# truncated: the data ends early
open(f"{w}/trunc.safetensors", "wb").write(b[:len(b) - 16])
# a JSON-looking label list that is not one
h = json.loads(json.dumps(hdr)); h["__metadata__"]["labels"] = "[\"0\", 1]"
write("labels.safetensors", h, data)
PY
expect_error "safetensors head: F16" 'f16.safetensors: tensor "weight" is F16, expected F64 or F32' "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/f16.safetensors" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "safetensors head: NaN" 'nan.safetensors: tensor "weight": entry 5 is not a finite number' "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/nan.safetensors" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "safetensors head: rows vs labels" 'shape.safetensors: tensor "weight" has shape [2, 32], expected [3, D]' "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/shape.safetensors" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "safetensors head: no labels" 'nolabels.safetensors: not a squint head: __metadata__ has no string "labels"' "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/nolabels.safetensors" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "safetensors head: truncated" "trunc.safetensors: " "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/trunc.safetensors" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "safetensors head: a label not a string" 'labels.safetensors: "labels"[1] must be a string' "$W/o.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/labels.safetensors" --input "$W/in.txt" --output "$W/o.jsonl"
expect_error "quantize --head refuses a hostile head" 'nan.safetensors: tensor "weight"' "$W/x.sqm" -- \
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" --head "$W/nan.safetensors" -o "$W/x.sqm"

# serve: POST /classify with the stored head = `squint classify`.
if "$SQ" serve --help >/dev/null 2>&1 && ! "$SQ" serve --help 2>&1 | grep -q "built without"; then
  "$SQ" serve "$W/mh.sqm" --port 0 --quiet >"$W/serve.log" 2>&1 &
  pids+=($!)
  URL=""
  for _ in $(seq 1 400); do
    URL=$(grep -o 'listening on http://[^ ]*' "$W/serve.log" | head -1 | sed 's/listening on //')
    [[ -n $URL ]] && break
    sleep 0.05
  done
  if [[ -n $URL ]] && $PY - "$URL" "$W/in.txt" "$W/stored.jsonl" <<'PY'
import json, sys, urllib.request
url, texts, cls = sys.argv[1], open(sys.argv[2]).read().split("\n")[:-1], [json.loads(l) for l in open(sys.argv[3])]
req = urllib.request.Request(url + "/classify", data=json.dumps({"inputs": texts}).encode(),
                             headers={"Content-Type": "application/json"})
out = json.loads(urllib.request.urlopen(req, timeout=30).read())
assert len(out) == len(cls), out
for row, c in zip(out, cls):
    assert row[0]["label"] == c["label"], (row, c)
    assert all(abs(x["score"] - c["probs"][x["label"]]) < 1e-7 for x in row), (row, c)
PY
  then pass "serve MODEL: POST /classify with the stored head = classify"; else fail "serve /classify: $(tail -2 "$W/serve.log")"; fi
else
  echo "ok   - serve: built without a server (skipped)"
fi

# embed-run: the head's accuracy on both models and the gate.
"$SQ" embed-run "$W/mh.sqm" --reference "$W/m" --input "$W/sst.tsv" --task sst2 --quiet \
  --gate max_accuracy_drop=0.5 --report "$W/r.json" >"$W/er.txt" 2>&1; erc=$?
if [[ $erc -eq 0 ]] && grep -q "^head acc   model 1.0000  reference 1.0000  drop +0.00 points" "$W/er.txt" &&
  grep -q "gate max_accuracy_drop    PASS" "$W/er.txt" &&
  $PY -c 'import json,sys; t=json.load(open(sys.argv[1]))["metrics"]["sst2"]["head_accuracy"]; assert t["model"] == 1 and t["drop"] == 0, t' "$W/r.json"; then
  pass "embed-run: the stored head's accuracy, gate passes"; else fail "embed-run head ($erc): $(tail -3 "$W/er.txt")"; fi
# A deliberately bad build: another model's weights under this head.
"$SQ" quantize "$W/other" --calib "$W/other.sqc" --head "$W/h.safetensors" -o "$W/bad.sqm" >/dev/null 2>&1
printf 'version: 1\ngates:\n  max_accuracy_drop: 0.5\n' >"$W/gate.yaml"
"$SQ" embed-run "$W/bad.sqm" --reference "$W/m" --input "$W/sst.tsv" --task sst2 --quiet \
  --recipe "$W/gate.yaml" >"$W/bad.txt" 2>"$W/bad.err"; brc=$?
if [[ $brc -eq 1 ]] && grep -q "gate max_accuracy_drop    FAIL" "$W/bad.txt" &&
  grep -q "gate failed: max_accuracy_drop" "$W/bad.err"; then
  pass "embed-run: a bad build fails the recipe's max_accuracy_drop (exit 1)"; else fail "bad build gate ($brc): $(cat "$W/bad.txt" "$W/bad.err" | tail -3)"; fi
"$SQ" embed-run "$W/m.sqm" --reference "$W/m" --input "$W/sst.tsv" --task sst2 --quiet \
  --gate max_accuracy_drop=1 >"$W/nohead.txt" 2>&1; nrc=$?
if [[ $nrc -eq 1 ]] && grep -q "max_accuracy_drop    FAIL  cannot be measured: needs a classification head" "$W/nohead.txt"; then
  pass "embed-run: the gate without a head cannot be measured (fails)"; else fail "gate without head ($nrc)"; fi
expect_error "embed-run --head on a plain input" "--head needs an SST-2 input" "" -- \
  "$SQ" embed-run "$W/m.sqm" --reference "$W/m" --input "$W/in.txt" --head "$W/h.json" --quiet
expect_error "embed-run: an out-of-range gate" "'max_accuracy_drop' must be a number in [0, 100]" "" -- \
  "$SQ" embed-run "$W/m.sqm" --reference "$W/m" --input "$W/sst.tsv" --gate max_accuracy_drop=101 --quiet
finish
