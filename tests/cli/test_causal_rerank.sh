#!/usr/bin/env bash
# A causal LM reranking as Qwen3-Reranker does (libquant/run/lm_judge.h), tiny
# Qwen3 fixture with the real Qwen3 tokenizer: rerank --query/--docs from the
# folder (ranked by score, logit = logit yes - logit no, --top-k, --output),
# calibrate + quantize to an int8 .sqm that reranks close to fp32 (while a
# model with other weights does not: the check can fail), the same bytes at 1
# and 2 threads, serve's POST /rerank (the scores of rerank), and refusals by name: --instruction for an embedding model, a
# --max-seq that leaves no room or passes the context, a llama2.c model (no
# ChatML tokens). The parity with PyTorch is tests/oracle/check_qwen3_rerank.sh.
# Exits 77 without the shared Qwen3 tokenizer or /usr/bin/python3 + numpy.
# usage: test_causal_rerank.sh SQUINT
set -uo pipefail
SQ=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
[[ -f $T/tokenizer.json ]] || { echo "SKIP: qwen3-tokenizer not found"; exit 77; }
$PY -c "import numpy" 2>/dev/null || { echo "SKIP: $PY has no numpy"; exit 77; }
W=$(mktemp -d /tmp/squint-crr-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT
source "$HERE/lib.sh"

M=$W/lm
for seed in 1 2; do
  $PY "$HERE/../fixture/gen_qwen3_fixture.py" --shape tiny --seed $seed --tokenizer-dir "$T" "$W/lm$seed" >/dev/null ||
    { echo "FAIL - fixture"; exit 1; }
done
mv "$W/lm1" "$M"
cat >"$W/docs.txt" <<'TXT'
The capital of China is Beijing.
Gravity is a force that attracts two bodies towards each other.
Tides are caused by the gravitational pull of the moon and the sun.
你好，世界！ Ünïcödé — emoji 🙂 and code: def f(x): return x ** 2
A recipe for apple pie needs apples, flour, butter and sugar.
TXT

# 1. the folder: every document ranked once, best first, with its logit
if "$SQ" rerank "$M" --query "what causes tides" --docs "$W/docs.txt" --output "$W/r.jsonl" &&
  $PY - "$W/r.jsonl" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5], rows
assert sorted(r["index"] for r in rows) == [0, 1, 2, 3, 4], rows
assert all(a["score"] >= b["score"] for a, b in zip(rows, rows[1:])), rows
assert all(abs(r["score"] - 1 / (1 + math.exp(-r["logit"]))) < 1e-6 for r in rows), rows
assert len({r["score"] for r in rows}) == 5, "the scores do not depend on the document"
PY
then pass "rerank a folder"; else fail "rerank a folder"; fi
"$SQ" rerank "$M" --query "what causes tides" --docs "$W/docs.txt" --top-k 2 >"$W/top2.jsonl" &&
  [[ $(wc -l <"$W/top2.jsonl") -eq 2 ]] && cmp -s "$W/top2.jsonl" <(head -2 "$W/r.jsonl") &&
  pass "--top-k 2" || fail "--top-k 2"
"$SQ" rerank "$M" --query "what causes tides" --docs "$W/docs.txt" --instruction "Find the answer" >"$W/i.jsonl" &&
  ! cmp -s "$W/i.jsonl" "$W/r.jsonl" && pass "--instruction changes the prompt" || fail "--instruction"

# 2. an int8 .sqm reranks close to fp32; another model's scores are not close
$PY - "$W/pairs.jsonl" <<'PY'
import json, sys
q = ["what causes tides", "capital of china", "how to bake a pie", "what is gravity"]
d = [l.strip() for l in open(sys.argv[1].replace("pairs.jsonl", "docs.txt"))]
with open(sys.argv[1], "w") as f:
    for a in q:
        for b in d:
            f.write(json.dumps({"query": a, "document": b}) + "\n")
PY
cut -f6 "${SQUINT_SHARED_DATA}/stsb-glue/original/sts-test.tsv" | head -200 >"$W/corpus.txt"
if "$SQ" calibrate "$M" --corpus "$W/corpus.txt" -o "$W/lm.sqc" 2>/dev/null &&
  "$SQ" quantize "$M" --calib "$W/lm.sqc" -o "$W/lm.sqm" >/dev/null 2>&1; then
  "$SQ" rerank "$M" --pairs "$W/pairs.jsonl" >"$W/f32.jsonl" &&
    "$SQ" rerank "$W/lm.sqm" --pairs "$W/pairs.jsonl" --threads 2 >"$W/q.jsonl" &&
    "$SQ" rerank "$W/lm.sqm" --pairs "$W/pairs.jsonl" --threads 1 >"$W/q1.jsonl" &&
    "$SQ" rerank "$W/lm2" --pairs "$W/pairs.jsonl" >"$W/other.jsonl" || fail "rerank --pairs"
  cmp -s "$W/q.jsonl" "$W/q1.jsonl" && pass ".sqm: the same bytes at 1 and 2 threads" ||
    fail ".sqm: 1 and 2 threads differ"
  $PY - "$W" <<'PY' && pass "int8 .sqm close to fp32, another model not" || fail "int8 .sqm vs fp32"
import json, sys
load = lambda n: [json.loads(l)["logit"] for l in open(f"{sys.argv[1]}/{n}.jsonl")]
f, q, o = load("f32"), load("q"), load("other")
dq = max(abs(a - b) for a, b in zip(f, q))
do = max(abs(a - b) for a, b in zip(f, o))
print(f"max |logit int8 - fp32| {dq:.4f}, another model {do:.4f}, fp32 logits {min(f):.3f} .. {max(f):.3f}")
sys.exit(0 if dq < 0.15 < do else 1)
PY
else
  fail "calibrate / quantize the causal LM"
fi

# 3. serve: POST /rerank gives the scores of squint rerank, /info lists it;
# a llama2.c model's /rerank is refused with the reason
if [[ $("$SQ" serve x 2>&1) == *"built without libmicrohttpd"* ]]; then
  echo "skip - serve: squint was built without libmicrohttpd"
else
  start_serve serve "$W/lm.sqm" --port 0 --threads 1
  "$SQ" rerank "$W/lm.sqm" --query "what causes tides" --docs "$W/docs.txt" >"$W/cli.jsonl"
  "$SQ" rerank "$W/lm.sqm" --query "what causes tides" --docs "$W/docs.txt" \
    --instruction "Find the answer" >"$W/cli-i.jsonl"
  if [[ -z $URL ]]; then fail "serve did not start: $(tail -2 "$W/serve.log")"
  elif $PY - "$URL" "$W/docs.txt" "$W/cli.jsonl" "$W/cli-i.jsonl" <<'PY'
import json, sys, urllib.request
url, docs = sys.argv[1], open(sys.argv[2]).read().splitlines()
def want(ref):
    return [{"index": o["index"], "score": o["score"]} for o in map(json.loads, open(ref))]
def rerank(**extra):
    body = dict(query="what causes tides", texts=docs, **extra)
    req = urllib.request.Request(url + "/rerank", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))
got = rerank()
assert got == want(sys.argv[3]), (got, want(sys.argv[3]))
# the instruction per request: rerank --instruction's scores, then the default again
got = rerank(instruction="Find the answer")
assert got == want(sys.argv[4]) and got != want(sys.argv[3]), got
assert rerank(instruction=None) == want(sys.argv[3])
info = json.load(urllib.request.urlopen(url + "/info"))
assert "/rerank" in info["endpoints"], info
PY
  then pass "serve: POST /rerank gives the scores of squint rerank, with and without an \"instruction\""
  else fail "serve: POST /rerank"; fi
  code=$(curl -s -o "$W/e.json" -w '%{http_code}' -d '{"query":"q","texts":["a"],"instruction":7}' "$URL/rerank")
  [[ $code == 400 ]] && grep -q '"instruction\\" must be a string' "$W/e.json" &&
    pass "serve: a non-string instruction is 400" || fail "serve: instruction 7: $code $(cat "$W/e.json")"
  S260=${SQUINT_SHARED_DATA}/stories260K/stories260K.bin
  if [[ -f $S260 ]]; then
    start_serve serve260 "$S260" --port 0 --threads 1
    code=$(curl -s -o "$W/e.json" -w '%{http_code}' -d '{"query":"q","texts":["a"]}' "$URL/rerank")
    [[ $code == 400 ]] && grep -q "cannot rerank: .*llama2.c tokenizer" "$W/e.json" &&
      pass "serve: a llama2.c model's /rerank refused with the reason" ||
      fail "serve: llama2.c /rerank: $code $(cat "$W/e.json")"
  fi
fi

# 4. refusals, by name
"$PY" "$HERE/../fixture/gen_qwen3_fixture.py" --shape tiny --tokenizer-dir "$T" --embedding "$W/emb" >/dev/null
expect_error "--instruction for an embedding model" "instruction is for a causal LM" "$W/x.jsonl" -- \
  "$SQ" rerank "$W/emb" --query q --docs "$W/docs.txt" --instruction x --output "$W/x.jsonl"
expect_error "--max-seq leaves no room" "leaves no room for the pair" "$W/x.jsonl" -- \
  "$SQ" rerank "$M" --query q --docs "$W/docs.txt" --max-seq 40 --output "$W/x.jsonl"
expect_error "--max-seq past the context" "past the model's 256 positions" "$W/x.jsonl" -- \
  "$SQ" rerank "$M" --query q --docs "$W/docs.txt" --max-seq 300 --output "$W/x.jsonl"
S260=${SQUINT_SHARED_DATA}/stories260K/stories260K.bin
if [[ -f $S260 ]]; then
  expect_error "a llama2.c model has no ChatML prompt" "a llama2.c tokenizer has none" "$W/x.jsonl" -- \
    "$SQ" rerank "$S260" --query q --docs "$W/docs.txt" --output "$W/x.jsonl"
else
  echo "skip - stories260K not found"
fi
finish
