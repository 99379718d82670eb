#!/usr/bin/env bash
# squint train-head / classify end to end on a tiny fixture model (fp32
# checkpoint and its .sqm): a 3-class head from JSONL with string labels and
# a 2-class head from an SST-2-layout TSV; the training set learned, labels
# valid, probabilities summing to 1, the same bytes at --threads 1 and 2,
# --per-class picking N rows per class (by seed, deterministically); a pickle
# refused unread, a head of another width refused, hostile training files
# refused with file:line, exit 2 and no output left.
# usage: test_heads.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-heads-XXXXXX)
trap 'rm -rf "$W"' EXIT
source "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

"$GEN" "$W/m" --shape tiny --seed 5 >/dev/null &&
  "$SQ" calibrate "$W/m" --samples 64 --quiet -o "$W/m.sqc" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>&1 ||
  { echo "FAIL - fixture"; exit 1; }
"$GEN" "$W/wide" --shape tiny --seed 6 --hidden 48 >/dev/null || { echo "FAIL - wide fixture"; exit 1; }

# 3 classes, string labels, 8 texts each (JSONL); the label field nested.
$PY - "$W" <<'PY'
import json, sys
w = sys.argv[1]
words = {"animal": ["dog", "cat", "bird", "fox", "dogs", "cats", "birds", "lazy dog"],
         "nature": ["river", "mountain", "sea", "tree", "trees", "water", "sun", "moon"],
         "tech": ["computer", "network", "memory", "model", "data", "system", "layer", "vector"]}
with open(f"{w}/train.jsonl", "w") as f:
    for lab, ws in words.items():
        for i, x in enumerate(ws):
            f.write(json.dumps({"text": f"the {x} and the {ws[(i + 3) % 8]}", "meta": {"y": lab}}) + "\n")
with open(f"{w}/texts.jsonl", "w") as f:
    for i, x in enumerate(["the dog and the cat", "the river and the sea", "the model and the data",
                           "hello", "", "the quick brown fox"]):
        f.write(json.dumps({"text": x, "id": f"t{i}"}) + "\n")
# SST-2 layout: sentence<TAB>label, integer labels.
with open(f"{w}/train.tsv", "w") as f:
    f.write("sentence\tlabel\n")
    for i in range(10):
        f.write(f"the {words['animal'][i % 8]} and the {words['animal'][(i + 1) % 8]}\t1\n")
        f.write(f"the {words['tech'][i % 8]} and the {words['tech'][(i + 1) % 8]}\t0\n")
PY

check_head() { # FILE CLASSES ROWS
  $PY - "$@" <<'PY'
import json, sys
h = json.load(open(sys.argv[1])); C = int(sys.argv[2]); rows = int(sys.argv[3])
assert h["format"] == "squint-head" and h["version"] == 1, h["format"]
assert len(h["labels"]) == C and len(h["weights"]) == C and len(h["bias"]) == C
assert all(len(r) == h["dim"] for r in h["weights"])
t = h["training"]
assert t["rows_used"] == rows, t
assert t["train_accuracy"] >= 0.99, t
assert len(t["model_xxh64"]) == 16
PY
}

for M in "$W/m" "$W/m.sqm"; do
  tag=$(basename "$M")
  if "$SQ" train-head "$M" --train "$W/train.jsonl" --label-field meta.y --l2 0.1 --quiet --threads 1 -o "$W/h3.json" &&
    check_head "$W/h3.json" 3 24; then pass "$tag: 3-class head learns its set"; else fail "$tag: 3-class head"; fi
  if [[ $($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["labels"])' "$W/h3.json") == "['animal', 'nature', 'tech']" ]]; then
    pass "$tag: labels in byte order"; else fail "$tag: label order"; fi
  "$SQ" classify "$M" --head "$W/h3.json" --input "$W/texts.jsonl" --id-field id --threads 1 --quiet >"$W/c1.jsonl"
  rc1=$?
  "$SQ" classify "$M" --head "$W/h3.json" --input "$W/texts.jsonl" --id-field id --threads 2 --quiet \
    --output "$W/c2.jsonl"
  rc2=$?
  if [[ $rc1 -eq 0 && $rc2 -eq 0 ]] && cmp -s "$W/c1.jsonl" "$W/c2.jsonl"; then
    pass "$tag: classify bytes equal at --threads 1 and 2"; else fail "$tag: classify threads ($rc1 $rc2)"; fi
  if $PY - "$W/c1.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["index"] for r in rows] == list(range(6)), rows
assert [r["id"] for r in rows] == [f"t{i}" for i in range(6)]
for r in rows:
    assert set(r["probs"]) == {"animal", "nature", "tech"}, r
    assert abs(sum(r["probs"].values()) - 1) < 1e-6, r
    assert r["label"] == max(r["probs"], key=r["probs"].get)
# training-like texts get their class
assert [r["label"] for r in rows[:3]] == ["animal", "nature", "tech"], rows[:3]
PY
  then pass "$tag: classify lines, labels and probabilities"; else fail "$tag: classify output"; fi
  # The same bytes for the head at any thread count.
  "$SQ" train-head "$M" --train "$W/train.jsonl" --label-field meta.y --l2 0.1 --quiet --threads 2 -o "$W/h3b.json"
  if cmp -s "$W/h3.json" "$W/h3b.json"; then pass "$tag: head bytes equal at --threads 1 and 2"; else fail "$tag: head threads"; fi
done

# 2 classes from the SST-2 layout (integer labels, numeric order).
if "$SQ" train-head "$W/m.sqm" --train "$W/train.tsv" --quiet -o "$W/h2.json" && check_head "$W/h2.json" 2 20 &&
  [[ $($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["labels"])' "$W/h2.json") == "['0', '1']" ]]; then
  pass "2-class head from the SST-2 layout"; else fail "2-class head"; fi
printf 'the dog and the cat\nthe computer and the network\n' >"$W/two.txt"
if [[ $("$SQ" classify "$W/m.sqm" --head "$W/h2.json" --input "$W/two.txt" --quiet |
  $PY -c 'import json,sys; print(" ".join(json.loads(l)["label"] for l in sys.stdin))') == "1 0" ]]; then
  pass "2-class head classifies"; else fail "2-class classify"; fi

# --per-class: N rows per class, by seed; the same seed the same head.
for s in 1 2; do
  "$SQ" train-head "$W/m.sqm" --train "$W/train.jsonl" --label-field meta.y --per-class 3 --seed $s \
    --quiet -o "$W/p$s.json" || fail "per-class seed $s"
done
"$SQ" train-head "$W/m.sqm" --train "$W/train.jsonl" --label-field meta.y --per-class 3 --seed 1 \
  --quiet -o "$W/p1b.json"
if $PY - "$W/p1.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["training"]
assert t["rows_used"] == 9 and t["per_class"] == 3 and t["seed"] == 1 and t["rows_in_file"] == 24, t
PY
then pass "--per-class 3: 9 rows recorded"; else fail "--per-class rows"; fi
if cmp -s "$W/p1.json" "$W/p1b.json" && ! cmp -s "$W/p1.json" "$W/p2.json"; then
  pass "--per-class: same seed same head, another seed another"; else fail "--per-class determinism"; fi
expect_error "per-class above a class's size" "class 'animal' has 8 examples, fewer than the 9" "$W/p9.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/train.jsonl" --label-field meta.y --per-class 9 --quiet -o "$W/p9.json"

# A pickle is refused unread, by name or by its first bytes.
printf '\x80\x04\x95\x10\x00\x00\x00' >"$W/model_head.pkl"
cp "$W/model_head.pkl" "$W/head.json.bin"
expect_error "pickle by name" "pickles can run arbitrary code" "$W/out.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/model_head.pkl" --input "$W/two.txt" --output "$W/out.jsonl"
expect_error "pickle by content" "pickles can run arbitrary code" "$W/out.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/head.json.bin" --input "$W/two.txt" --output "$W/out.jsonl"
# A head of another width.
expect_error "dim mismatch" "the head is for 32-dimensional embeddings, but $W/wide gives 48" "$W/out.jsonl" -- \
  "$SQ" classify "$W/wide" --head "$W/h3.json" --input "$W/two.txt" --output "$W/out.jsonl"
# A broken head.
$PY -c 'import json,sys; h=json.load(open(sys.argv[1])); h["weights"][1]=h["weights"][1][:-1]; json.dump(h,open(sys.argv[2],"w"))' \
  "$W/h3.json" "$W/short.json"
expect_error "head with a short row" 'short.json: "weights[1]" must be an array of 32 numbers' "$W/out.jsonl" -- \
  "$SQ" classify "$W/m.sqm" --head "$W/short.json" --input "$W/two.txt" --output "$W/out.jsonl"

# Hostile training files: exit 2, file:line, no head left.
printf 'sentence\tlabel\nthe dog\t1\nthe cat\n' >"$W/short.tsv"
expect_error "tsv row without a label" "short.tsv:3: expected at least 2 tab-separated fields, found 1" "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/short.tsv" --quiet -o "$W/bad.json"
printf 'text\tlabel\nthe dog\t1\n' >"$W/nohdr.tsv"
expect_error "tsv without the text column" "nohdr.tsv:1: the header row has no 'sentence' column" "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/nohdr.tsv" --quiet -o "$W/bad.json"
printf '{"text": "a", "label": "x"}\n{"text": "b", "label": 1.5}\n' >"$W/float.jsonl"
expect_error "jsonl float label" 'float.jsonl:2: field "label" (the label) is missing or not a string or integer' "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/float.jsonl" --quiet -o "$W/bad.json"
printf '{"text": "a", "label": "x"}\n{"text": "b", "label": "y"\n' >"$W/broken.jsonl"
expect_error "jsonl broken line" "broken.jsonl:2: not a JSON object" "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/broken.jsonl" --quiet -o "$W/bad.json"
printf 'sentence\tlabel\nthe dog\t\xff\n' >"$W/utf.tsv"
expect_error "label not UTF-8" "utf.tsv:2: label is not valid UTF-8" "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/utf.tsv" --quiet -o "$W/bad.json"
printf 'sentence\tlabel\nthe dog\t1\nthe cat\t1\n' >"$W/one.tsv"
expect_error "one class" "needs two classes or more" "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/one.tsv" --quiet -o "$W/bad.json"
expect_error "unknown layout" "unknown training file layout" "$W/bad.json" -- \
  "$SQ" train-head "$W/m.sqm" --train "$W/two.txt" --quiet -o "$W/bad.json"
# A failing run leaves an existing head as it was.
cp "$W/h2.json" "$W/keep.json"
"$SQ" train-head "$W/m.sqm" --train "$W/short.tsv" --quiet -o "$W/keep.json" 2>/dev/null
if cmp -s "$W/h2.json" "$W/keep.json"; then pass "a failed run keeps the old head"; else fail "old head replaced"; fi
finish
