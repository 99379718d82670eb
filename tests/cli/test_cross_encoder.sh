#!/usr/bin/env bash
# Cross-encoders (BertForSequenceClassification): a fixture whose scores
# depend on its inputs, the CrossEncoder activation, calibration on the
# bundled question/evidence pairs, int8 / int4 .sqm files whose pair scores
# follow fp32's (embed-run score_spearman, which a deliberately bad build
# fails), rerank --query/--docs = --pairs = serve /rerank for the same pairs,
# several labels, and refusals (embed, bad configs, pair corpora).
# usage: test_cross_encoder.sh SQUINT GEN_FIXTURE PAIR_CORPUS
set -uo pipefail
SQ=$1 GEN=$2 PAIRS=$3
W=$(mktemp -d /tmp/squint-ce-XXXXXX)
trap 'kill $srv 2>/dev/null; rm -rf "$W"' EXIT
srv=
. "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
PY=/usr/bin/python3
export SQUINT_WRITE_CHECK=1 OMP_NUM_THREADS=2

"$GEN" --shape tiny --layers 3 --hidden 64 --heads 4 --ffn 128 --max-pos 128 --outliers 2 \
    --cross-encoder 1 --ce-activation sigmoid "$W/ce" >/dev/null || { echo "FAIL - fixture"; exit 1; }
"$GEN" --shape tiny --cross-encoder 3 "$W/nli" >/dev/null || { echo "FAIL - fixture"; exit 1; }

# 200 held-out pairs (not the bundled calibration pairs): STS-B-shaped .tsv
# for embed-run and JSONL for rerank --pairs, from sentences of the built-in
# vocabulary (the tiny fixture knows only those words).
$PY - "$W" <<'PY'
import json, random, sys
w = sys.argv[1]
words = ("the a cat dog sat on mat ran to house big small red blue quick brown fox jumps over "
         "lazy man woman child plays music reads book water river tree green sky night day "
         "sun moon star city road car train eats food cold hot").split()
rng = random.Random(7)
sent = lambda: " ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) + "."
pairs = [(sent(), sent()) for _ in range(200)]
with open(w + "/pairs.tsv", "w") as f:
    f.write("sentence1\tsentence2\tscore\n")
    for i, (a, b) in enumerate(pairs):
        f.write("%s\t%s\t%.1f\n" % (a, b, (i * 7) % 50 / 10))
with open(w + "/pairs.jsonl", "w") as f:
    for a, b in pairs:
        f.write(json.dumps({"query": a, "document": b}) + "\n")
with open(w + "/docs.txt", "w") as f:
    for a, b in pairs[:40]:
        f.write(b + "\n")
with open(w + "/q40.jsonl", "w") as f:
    for a, b in pairs[:40]:
        f.write(json.dumps({"query": pairs[0][0], "document": b}) + "\n")
PY

# 1. The fixture's scores depend on the pair, and the score is the
# sigmoid of the logit (the activation named in config.json).
"$SQ" rerank "$W/ce" --pairs "$W/pairs.jsonl" --output "$W/f32.jsonl" 2>/dev/null
if $PY - "$W/f32.jsonl" <<'PY'
import json, math, sys
r = [json.loads(l) for l in open(sys.argv[1])]
lg = [x["logit"] for x in r]
m = sum(lg) / len(lg)
sd = (sum((v - m) ** 2 for v in lg) / len(lg)) ** 0.5
assert len(r) == 200 and [x["index"] for x in r] == list(range(200))
assert sd > 0.3 and len(set(round(v, 6) for v in lg)) > 190, (sd, len(set(lg)))
for x in r:
    assert abs(x["score"] - 1 / (1 + math.exp(-x["logit"]))) < 1e-6, x
print("logit std %.3f over 200 pairs" % sd)
PY
then pass "fp32 scores depend on the pair; score = sigmoid(logit)"; else fail "fp32 scores"; fi

# 2. Calibration reads the bundled question/evidence pairs by default.
SQUINT_BUNDLED_PAIR_CORPUS=$PAIRS "$SQ" calibrate "$W/ce" --samples 128 --quiet -o "$W/ce.sqc" 2>/dev/null
if grep -q "pair_field: \"document\"" "$W/ce.sqc" 2>/dev/null || grep -aq 'pair_field: "document"' "$W/ce.sqc"; then
    pass "calibrated on text pairs (pair_field recorded)"
else fail "pair calibration provenance"; fi
"$SQ" quantize "$W/ce" --calib "$W/ce.sqc" -o "$W/ce8.sqm" >/dev/null 2>&1 || fail "quantize int8"
printf 'weights:\n  type: int4-g128\n' >"$W/int4.yaml"
"$SQ" quantize "$W/ce" --calib "$W/ce.sqc" --recipe "$W/int4.yaml" -o "$W/ce4.sqm" >/dev/null 2>&1 || fail "quantize int4"
for f in ce8 ce4; do
    if "$SQ" verify "$W/$f.sqm" >/dev/null 2>&1; then pass "verify $f"; else fail "verify $f"; fi
done
out=$("$SQ" inspect "$W/ce8.sqm" 2>&1)
[[ $out == *"num_labels 1, score_activation sigmoid"* && $out == *"qasper-pairs.jsonl.zst"* ]] &&
    pass "inspect shows the classifier and the pair corpus" || fail "inspect: $out"

# 3. Pair scores of the int8 / int4 files follow fp32's; a deliberately bad
# build (half of every activation clipped, nothing guarded) fails the gate.
run_gate() { "$SQ" embed-run "$W/$1.sqm" --reference "$W/ce" --input "$W/pairs.tsv" --quiet \
    --gate "score_spearman=$2" --report "$W/$1.json" >"$W/$1.txt" 2>&1; }
run_gate ce8 0.99 && pass "int8 score_spearman >= 0.99 ($(grep -o 'reference) [0-9.]*' "$W/ce8.txt"))" ||
    fail "int8 gate: $(cat "$W/ce8.txt")"
run_gate ce4 0.9 && pass "int4 score_spearman >= 0.9 ($(grep -o 'reference) [0-9.]*' "$W/ce4.txt"))" ||
    fail "int4 gate: $(cat "$W/ce4.txt")"
printf 'observer:\n  method: percentile\n  percentile: 50\n  guard: clip\noutliers:\n  enabled: false\n' >"$W/bad.yaml"
"$SQ" quantize "$W/ce" --calib "$W/ce.sqc" --recipe "$W/bad.yaml" -o "$W/bad.sqm" >/dev/null 2>&1
run_gate bad 0.99
rc=$?
[[ $rc -eq 1 ]] && grep -q "gate failed: score_spearman" "$W/bad.txt" &&
    pass "a bad build fails score_spearman (exit 1; $(grep -o 'reference) [0-9.]*' "$W/bad.txt"))" ||
    fail "bad build: exit $rc $(cat "$W/bad.txt")"
$PY -c "import json,sys; r=json.load(open(sys.argv[1])); assert r['mode']=='pairs' and r['pairs']==200 and r['metrics']['worst_pairs']" "$W/ce8.json" &&
    pass "embed-run report (pairs, worst pairs)" || fail "embed-run report"

# 4. One score per pair, whatever the route: --query/--docs, --pairs, serve.
"$SQ" rerank "$W/ce8.sqm" --pairs "$W/q40.jsonl" --output "$W/p40.jsonl"
q0=$($PY -c "import json; print(json.loads(open('$W/q40.jsonl').readline())['query'])")
"$SQ" rerank "$W/ce8.sqm" --query "$q0" --docs "$W/docs.txt" --output "$W/r40.jsonl"
if $PY - "$W/p40.jsonl" "$W/r40.jsonl" <<'PY'
import json, sys
p = {x["index"]: x["score"] for x in map(json.loads, open(sys.argv[1]))}
r = [json.loads(l) for l in open(sys.argv[2])]
assert len(r) == 40 and all(p[x["index"]] == x["score"] for x in r)
assert [x["score"] for x in r] == sorted((x["score"] for x in r), reverse=True)
PY
then pass "rerank --query/--docs = --pairs, best first"; else fail "rerank routes disagree"; fi
if "$SQ" serve --help >/dev/null 2>&1 && command -v curl >/dev/null; then
    port=$((20000 + RANDOM % 20000))
    "$SQ" serve "$W/ce8.sqm" --port $port 2>"$W/serve.log" &
    srv=$!
    for _ in $(seq 50); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
    body=$($PY -c "import json; print(json.dumps({'query': '$q0', 'texts': [l.rstrip('\n') for l in open('$W/docs.txt')]}))")
    curl -sf -XPOST "localhost:$port/rerank" -H 'Content-Type: application/json' -d "$body" >"$W/s40.json"
    code=$(curl -s -o /dev/null -w '%{http_code}' -XPOST "localhost:$port/embed" -d '{"inputs":"x"}')
    if $PY - "$W/s40.json" "$W/r40.jsonl" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); r = [json.loads(l) for l in open(sys.argv[2])]
assert [(x["index"], x["score"]) for x in s] == [(x["index"], x["score"]) for x in r]
PY
    then pass "serve /rerank = squint rerank"; else fail "serve /rerank differs"; fi
    [[ $code == 400 ]] && pass "serve: /embed on a cross-encoder is 400" || fail "serve /embed: $code"
    kill $srv; wait $srv 2>/dev/null; srv=
else
    echo "ok   - serve checks SKIPPED (squint built without libmicrohttpd, or no curl)"
fi

# 5. Several labels; refusals.
"$SQ" calibrate "$W/nli" --corpus "$W/pairs.jsonl" --pair-field document --field query --samples 64 --quiet -o "$W/nli.sqc" 2>/dev/null
"$SQ" quantize "$W/nli" --calib "$W/nli.sqc" -o "$W/nli.sqm" >/dev/null 2>&1
out=$("$SQ" inspect "$W/nli.sqm" 2>&1)
[[ $out == *"num_labels 3, score_activation softmax"* ]] && pass "3 labels: softmax" || fail "nli inspect"
"$SQ" classify "$W/nli.sqm" --input "$W/q40.jsonl" --field query --pair-field document --quiet >"$W/nli.jsonl"
if $PY - "$W/nli.jsonl" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) == 40
for x in r:
    p = x["probs"]
    assert list(p) == ["class_0", "class_1", "class_2"] and abs(sum(p.values()) - 1) < 1e-6
    assert x["label"] == max(p, key=p.get)
assert len({x["label"] for x in r}) > 1 or len({round(x["probs"]["class_0"], 4) for x in r}) > 10
PY
then pass "classify: 3-label pairs, softmax probabilities"; else fail "classify pairs"; fi
expect_error "classify: --head on a sequence classifier" "its own classifier" "" -- "$SQ" classify "$W/nli.sqm" --input "$W/docs.txt" --head "$W/none.json"
expect_error "rerank refuses 3 labels" "3 labels" "$W/x.jsonl" -- "$SQ" rerank "$W/nli.sqm" --query q --docs "$W/docs.txt" --output "$W/x.jsonl"
expect_error "embed refuses a cross-encoder" "not an embedding model" "$W/x.npy" -- "$SQ" embed "$W/ce8.sqm" --input "$W/docs.txt" --output "$W/x.npy"
# a cross-encoder whose config.json has no "architectures" (or []) is still
# one: decided from its classifier.weight, not run as a bi-encoder
"$SQ" rerank "$W/ce" --query "the cat" --docs "$W/docs.txt" >"$W/r.ref" 2>/dev/null &&
  grep -q '"logit"' "$W/r.ref" || fail "the cross-encoder's reference scores"
for v in none empty; do
  rm -rf "$W/ce-$v"; cp -r "$W/ce" "$W/ce-$v"
  $PY -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c.pop('architectures') if sys.argv[2]=='none' else c.update(architectures=[]); json.dump(c,open(p,'w'))" "$W/ce-$v/config.json" "$v"
  "$SQ" rerank "$W/ce-$v" --query "the cat" --docs "$W/docs.txt" 2>/dev/null | cmp -s - "$W/r.ref" &&
    pass "architectures $v: scored as the cross-encoder it is" || fail "architectures $v: not scored as a cross-encoder"
  expect_error "architectures $v: embed refuses it" "not an embedding model" "$W/x.npy" -- "$SQ" embed "$W/ce-$v" --input "$W/docs.txt" --output "$W/x.npy"
done
printf 'sentence\tlabel\nthe cat sat\t1\nthe dog ran\t0\n' >"$W/train.tsv"
expect_error "train-head refuses a cross-encoder" "not an embedding model" "$W/h.json" -- "$SQ" train-head "$W/ce8.sqm" --train "$W/train.tsv" -o "$W/h.json"
expect_error "--pair-field on a text corpus" "JSONL" "$W/x.sqc" -- "$SQ" calibrate "$W/ce" --corpus "$W/docs.txt" --pair-field document --quiet -o "$W/x.sqc"
printf '{"query":"a b","document":"c"}\n{"query":"d"}\n' >"$W/broken.jsonl"
expect_error "a pair line without its second text" "broken.jsonl:2" "$W/x.sqc" -- "$SQ" calibrate "$W/ce" --corpus "$W/broken.jsonl" --field query --pair-field document --quiet -o "$W/x.sqc"
expect_error "rerank --pairs line without its document" "broken.jsonl:2" "$W/x.jsonl" -- "$SQ" rerank "$W/ce" --pairs "$W/broken.jsonl" --output "$W/x.jsonl"
cfgbad() { cp -r "$W/${3:-ce}" "$W/$1"; $PY - "$W/$1/config.json" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2])); json.dump(c, open(sys.argv[1], "w"))
PY
}
cfgbad act '{"sbert_ce_default_activation_function": "torch.nn.modules.activation.ReLU"}'
expect_error "an activation squint lacks" "ReLU" "" -- "$SQ" rerank "$W/act" --pairs "$W/q40.jsonl"
cfgbad dup '{"id2label": {"0": "yes", "1": "no", "2": "yes"}, "label2id": {}}' nli
expect_error "duplicate label names" "twice" "" -- "$SQ" rerank "$W/dup" --pairs "$W/q40.jsonl"
cfgbad shape '{"id2label": {"0": "a", "1": "b"}}'
expect_error "classifier shape vs num_labels" "classifier.weight" "" -- "$SQ" rerank "$W/shape" --pairs "$W/q40.jsonl"
cfgbad pt '{"problem_type": "ranking"}'
expect_error "unknown problem_type" "problem_type" "" -- "$SQ" rerank "$W/pt" --pairs "$W/q40.jsonl"
finish
