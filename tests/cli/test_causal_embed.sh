#!/usr/bin/env bash
# A Qwen3-Embedding-style causal embedding model (gen_qwen3_fixture.py
# --embedding, tiny shape, the real Qwen3 tokenizer) through the pipeline:
# embed from the folder (the instruction prompt, the appended <|endoftext|>,
# last-token pooling, the same bytes at 1 and 2 threads), calibrate and
# quantize to an int8 .sqm (SQM.md 10.8: pooling last, tokenizer.single_suffix,
# int8 token rows, no LM head), the same bytes when quantized twice, inspect, embed from the
# .sqm (close to fp32), embed-run, serve's /v1/embeddings and the Python
# binding over libsquint (the bytes of squint embed), generate refusing
# the .sqm (int8 token rows, no LM head), and refusals by name.
# Exits 77 without the shared Qwen3 tokenizer or /usr/bin/python3 + numpy.
# usage: test_causal_embed.sh SQUINT LIBSQUINT_SO SOURCE_ROOT SQM_POKE
set -uo pipefail
SQ=$1 LIB=$2 SRC=$3 POKE=$4
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
[[ -f $T/tokenizer.json ]] || { echo "SKIP: qwen3-tokenizer not found"; exit 77; }
$PY -c "import numpy" 2>/dev/null || { echo "SKIP: $PY has no numpy"; exit 77; }
W=$(mktemp -d /tmp/squint-cemb-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT
source "$HERE/lib.sh"

M=$W/qe
$PY "$HERE/../fixture/gen_qwen3_fixture.py" --shape tiny --tokenizer-dir "$T" --embedding "$M" >/dev/null ||
  { echo "FAIL - fixture"; exit 1; }
cat >"$W/texts.txt" <<'TXT'
What is the capital of China?
Explain gravity
The capital of China is Beijing.
Gravity is a force that attracts two bodies towards each other.
你好，世界！ Ünïcödé — emoji 🙂 and code: def f(x): return x ** 2
TXT

# 1. the folder: prompt, appended token, threads
"$SQ" embed "$M" --input "$W/texts.txt" --prompt query --output "$W/q2.npy" --tokens-output "$W/q.tok" --threads 2 &&
  "$SQ" embed "$M" --input "$W/texts.txt" --prompt query --output "$W/q1.npy" --threads 1 ||
  { echo "FAIL - squint embed on the folder"; exit 1; }
cmp -s "$W/q1.npy" "$W/q2.npy" && pass "folder: the same bytes at 1 and 2 threads" || fail "folder: threads differ"
if $PY - "$W/q.tok" <<'PY'
import json, sys
rows = [json.loads(l)["ids"] for l in open(sys.argv[1])]
# "Instruct:" (641, 1235, 25) first, <|endoftext|> (151643) last, once
assert all(r[:3] == [641, 1235, 25] and r[-1] == 151643 and r.count(151643) == 1 for r in rows), rows
PY
then pass "folder: the instruction before each query, <|endoftext|> after it"
else fail "folder: the query ids"; fi
"$SQ" embed "$M" --input "$W/texts.txt" --output "$W/d.npy" || fail "folder: documents"
if $PY - "$W/q2.npy" "$W/d.npy" <<'PY'
import sys, numpy as np
q, d = np.load(sys.argv[1]), np.load(sys.argv[2])
assert np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-5)   # Normalize module
c = q @ q.T
assert (c[~np.eye(len(q), dtype=bool)] < 0.99).all(), c          # texts differ
assert np.abs(q - d).max() > 0.01                                # the prompt matters
PY
then pass "folder: unit vectors, distinct texts, the prompt changes the embedding"
else fail "folder: the embeddings"; fi

# 2. int8 .sqm
cut -f6 "${SQUINT_SHARED_DATA:-}/stsb-glue/original/sts-train.tsv" 2>/dev/null | head -200 >"$W/corpus.txt"
[[ -s $W/corpus.txt ]] || for i in $(seq 1 200); do echo "Sentence $i about topic $((i % 17)) and more words."; done >"$W/corpus.txt"
"$SQ" calibrate "$M" --corpus "$W/corpus.txt" --samples 64 --quiet -o "$W/qe.sqc" 2>/dev/null &&
  "$SQ" quantize "$M" --calib "$W/qe.sqc" -o "$W/a.sqm" >/dev/null 2>&1 &&
  "$SQ" quantize "$M" --calib "$W/qe.sqc" -o "$W/b.sqm" >/dev/null 2>&1 || { echo "FAIL - quantize"; exit 1; }
cmp -s "$W/a.sqm" "$W/b.sqm" && pass "quantize: the same bytes twice" || fail "quantize: bytes differ"
# without --corpus: the bundled sentences, as an encoder takes them (a
# language model is refused: its text is not sentences to embed)
if "$SQ" calibrate "$M" --samples 8 --max-seq 32 --quiet -o "$W/qb.sqc" 2>"$W/qb.err"; then
  pass "calibrate: the bundled corpus without --corpus"
else fail "calibrate without --corpus: $(cat "$W/qb.err")"; fi
"$SQ" verify "$W/a.sqm" >/dev/null 2>&1 && pass "verify" || fail "verify"
info=$("$SQ" inspect "$W/a.sqm")
[[ $info == *"pooling last, normalize true"* && $info == *"lm head:     none"* ]] &&
  pass "inspect: a causal embedding model, no LM head" || fail "inspect: $info"
# int8 token rows (one scale per row), no classifier tensor (SQM.md 10.8)
$PY - "$SQ" "$W/a.sqm" <<'PY' && pass "int8 token rows, no classifier" || fail "the token rows / classifier"
import json, subprocess, sys
j = json.loads(subprocess.run([sys.argv[1], "inspect", "--json", "--tensors", sys.argv[2]],
                              capture_output=True, text=True, check=True).stdout)
assert j["metadata"]["embeddings_type"] == "int8", j["metadata"]["embeddings_type"]
names = {t["name"]: t for t in j["tensors"]}
assert names["embeddings.word"]["dtype"] == "i8" and "embeddings.word.scale" in names, names["embeddings.word"]
assert not any(n.startswith("classifier") for n in names), [n for n in names if "classifier" in n]
PY
[[ $("$SQ" inspect --json "$W/a.sqm") == *'"single_suffix"'* ]] && pass "inspect --json: single_suffix" || fail "inspect --json"
prefix=$($PY -c "import json; print(json.load(open('$M/config_sentence_transformers.json'))['prompts']['query'], end='')")
"$SQ" embed "$W/a.sqm" --input "$W/texts.txt" --prefix "$prefix" --output "$W/s.npy" --tokens-output "$W/s.tok" ||
  fail ".sqm: embed"
cmp -s <(cut -d, -f2- "$W/q.tok") <(cut -d, -f2- "$W/s.tok") && pass ".sqm: the folder's ids" || fail ".sqm: ids differ"
if $PY - "$W/s.npy" "$W/q2.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
c = (a * b).sum(1)
print(f"int8 vs fp32 cosine min {c.min():.4f}")
assert c.min() > 0.97, c
PY
then pass ".sqm: int8 close to fp32"
else fail ".sqm: int8 far from fp32"; fi
"$SQ" embed-run "$W/a.sqm" --reference "$M" --input "$W/texts.txt" --gate cos_min=0.9 >"$W/er.txt" 2>&1 &&
  grep -q "(sqm," "$W/er.txt" && pass "embed-run: gates against the folder" || fail "embed-run: $(tail -3 "$W/er.txt")"
# forged: int8 token rows without pooling last (a causal LM needs its head),
# a NaN row scale
"$POKE" "$W/a.sqm" "$W/f1.sqm" --replace "pooling: last" "xooling: last" >/dev/null &&
  expect_error "int8 token rows in a causal LM" "embeddings_type int8 is for a causal embedding model" "" -- \
    "$SQ" embed "$W/f1.sqm" --input "$W/texts.txt" --output "$W/x.npy"
"$POKE" "$W/a.sqm" "$W/f2.sqm" --replace "embeddings_type: int8" "embeddings_type: fp32" >/dev/null &&
  expect_error "int8 token rows said to be fp32" "embeddings.word" "" -- \
    "$SQ" embed "$W/f2.sqm" --input "$W/texts.txt" --output "$W/x.npy"
"$POKE" "$W/a.sqm" "$W/f3.sqm" embeddings.word.scale 7 --set-f32 nan >/dev/null &&
  expect_error "a NaN token row scale" "embeddings.word.scale\": entry 7 is nan" "" -- \
    "$SQ" embed "$W/f3.sqm" --input "$W/texts.txt" --output "$W/x.npy"
expect_error "generate on the embedding .sqm (no LM head)" "the model has no LM head" "" -- \
  "$SQ" generate "$W/a.sqm" --prompt "Hello" --max-tokens 4 --temperature 0

"$SQ" embed "$W/a.sqm" --input "$W/texts.txt" --output "$W/ref.npy" || fail ".sqm: embed to .npy"

# 3. serve: /v1/embeddings gives squint embed's bytes
if [[ $("$SQ" serve x 2>&1) == *"built without libmicrohttpd"* ]]; then
  echo "skip - serve: squint was built without libmicrohttpd"
else
  "$SQ" embed "$W/a.sqm" --input "$W/texts.txt" --output "$W/ref.jsonl"
  start_serve serve "$W/a.sqm" --port 0 --threads 1
  if [[ -z $URL ]]; then fail "serve did not start: $(tail -2 "$W/serve.log")"
  elif $PY - "$URL" "$W/texts.txt" "$W/ref.jsonl" <<'PY'
import json, sys, urllib.request
url, texts, ref = sys.argv[1], open(sys.argv[2]).read().splitlines(), sys.argv[3]
want = [json.loads(l)["embedding"] for l in open(ref)]
req = urllib.request.Request(url + "/v1/embeddings", json.dumps({"input": texts}).encode(),
                             {"Content-Type": "application/json"})
got = [d["embedding"] for d in json.load(urllib.request.urlopen(req))["data"]]
assert got == want, "serve differs from squint embed"
PY
  then pass "serve: /v1/embeddings gives the bytes of squint embed"
  else fail "serve: /v1/embeddings"; fi
fi

# 4. libsquint through the Python binding: the .sqm and the folder (not
# under a sanitizer: the interpreter cannot load an ASan-instrumented library)
if [[ $(ldd "$LIB" 2>/dev/null) == *libasan* ]]; then
  echo "skip - libsquint (Python binding): a sanitizer build"
elif SQUINT_LIB=$LIB PYTHONPATH=$SRC/python $PY - "$W" "$M" <<'PY'
import sys, numpy as np, squint
W, M = sys.argv[1], sys.argv[2]
texts = open(W + "/texts.txt").read().splitlines()
assert np.array_equal(squint.Model(W + "/a.sqm").embed(texts), np.load(W + "/ref.npy"))
assert np.array_equal(squint.Model(M).embed(texts), np.load(W + "/d.npy"))
PY
then pass "libsquint (Python binding): the bytes of squint embed, .sqm and folder"
else fail "libsquint (Python binding)"; fi

# 5. refusals by name
cp -r "$M" "$W/mean"
printf '{"word_embedding_dimension": 64, "pooling_mode_mean_tokens": true}' >"$W/mean/1_Pooling/config.json"
expect_error "a causal LM with mean pooling" "is a causal LM without last-token pooling" "$W/x.npy" \
  -- "$SQ" embed "$W/mean" --input "$W/texts.txt" --output "$W/x.npy"
cp -r "$M" "$W/rob"
$PY - "$W/rob/tokenizer.json" <<'PY'
import json, sys
p = sys.argv[1]; t = json.load(open(p))
t["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}
json.dump(t, open(p, "w"))
PY
expect_error "an unsupported post-processor" "tokenizer.json: post_processor type \"RobertaProcessing\" is not supported here" "$W/x.npy" \
  -- "$SQ" embed "$W/rob" --input "$W/texts.txt" --output "$W/x.npy"
$PY - "$W/rob/tokenizer.json" <<'PY'
import json, sys
p = sys.argv[1]; t = json.load(open(p))
t["post_processor"] = {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A"}},
    {"SpecialToken": {"id": "<none>"}}], "special_tokens": {}}
json.dump(t, open(p, "w"))
PY
expect_error "a template naming an unknown token" "post_processor.single names the token \"<none>\", which post_processor.special_tokens does not give exactly one id" "$W/x.npy" \
  -- "$SQ" embed "$W/rob" --input "$W/texts.txt" --output "$W/x.npy"
expect_error "mean pooling asked of a causal embedding model" "pools its last token, not mean" "$W/x.npy" \
  -- "$SQ" embed "$M" --pooling mean --input "$W/texts.txt" --output "$W/x.npy"
expect_error "bench on a causal embedding model" "no encoder layers" "" -- "$SQ" bench "$M" --batch 1 --seq 8
finish
