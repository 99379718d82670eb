#!/usr/bin/env bash
# End-to-end CLI tests of `squint embed` / `squint bench`: help and usage,
# every bad input of the foundation issue (clear message, exit 2, no output
# file), output formats, archives, dtypes and determinism across threads.
# usage: test_cli.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/squint-cli-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0


"$GEN" "$W/m" --shape tiny --seed 3 --outliers 1 >/dev/null || { echo "fixture generation failed"; exit 1; }
printf 'Hello world!\nThe quick brown fox jumps over the lazy dog.\n\nnaïve café 東京 — ünïcödé\n' > "$W/in.txt"
for i in $(seq 1 40); do printf 'sentence number %d with a few more words %.0s' "$i" $(seq 1 $i); echo; done >> "$W/in.txt"
N=$(wc -l < "$W/in.txt")

# --- help and usage ---
"$SQ" help | grep -q "embed" && pass "squint help lists embed" || fail "squint help"
"$SQ" embed --help | grep -q -- "--max-seq" && pass "embed --help" || fail "embed --help"
"$SQ" help bench | grep -q -- "--seq" && pass "help bench" || fail "help bench"
expect_error "unknown command" "unknown command" "" -- "$SQ" frobnicate
expect_error "missing --input" "--input is required" "" -- "$SQ" embed "$W/m"
expect_error "bad --batch" "--batch" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --batch 0
expect_error "bad --pooling" "--pooling" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --pooling max

# --- good runs and formats ---
"$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/a.npy" --threads 1 --quiet &&
  "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/b.npy" --threads 2 --quiet &&
  cmp -s "$W/a.npy" "$W/b.npy" && pass "byte-identical .npy at 1 and 2 threads" ||
  fail "determinism across threads"
"$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/a.f32" --quiet &&
  [[ $(stat -c %s "$W/a.f32") -eq $((N * 32 * 4)) ]] && pass ".f32 size" || fail ".f32 size"
"$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/a.jsonl" --quiet &&
  [[ $(wc -l < "$W/a.jsonl") -eq $N ]] && pass ".jsonl has one line per input" || fail ".jsonl"
"$SQ" embed "$W/m" --input - --quiet < "$W/in.txt" | cmp -s - "$W/a.jsonl" && pass "stdin input, stdout output" || fail "stdin/stdout"
printf '{"t":{"x":"Hello world!"}}\n' > "$W/in.jsonl"
head -1 "$W/in.txt" > "$W/one.txt"
"$SQ" embed "$W/m" --input "$W/in.jsonl" --field t.x --output "$W/j.jsonl" --quiet &&
  "$SQ" embed "$W/m" --input "$W/one.txt" --output "$W/one.jsonl" --quiet &&
  cmp -s "$W/one.jsonl" "$W/j.jsonl" && pass "JSONL input with dotted --field" || fail "JSONL --field"
"$SQ" embed "$W/m" --input "$W/in.txt" --max-seq 8 --tokens-output "$W/t.jsonl" --output "$W/t.npy" --quiet &&
  ! grep -qE '(,[0-9]+){8}' "$W/t.jsonl" && grep -q '"ids":\[101,.*,102\]' "$W/t.jsonl" && pass "--max-seq truncates with [CLS]/[SEP]" || fail "--max-seq"
"$SQ" embed "$W/m" --input "$W/in.txt" --pooling mean --no-normalize --output "$W/mean.npy" --quiet &&
  ! cmp -s "$W/mean.npy" "$W/a.npy" && pass "--pooling mean changes the output" || fail "--pooling mean"

# Archives: the same model as .tar.gz and .zip gives identical embeddings.
tar -C "$W" -czf "$W/m.tar.gz" m
"$SQ" embed "$W/m.tar.gz" --input "$W/in.txt" --output "$W/tgz.npy" --quiet && cmp -s "$W/tgz.npy" "$W/a.npy" &&
  pass "model from .tar.gz" || fail "model from .tar.gz"
# An error inside an archive names the archive and the member, never the
# temporary folder it was extracted to (gone by the time the user reads it).
mkdir -p "$W/arc" && cp -r "$W/m" "$W/arc/" && echo '{"hidden_size": 32,' >"$W/arc/m/config.json"
tar -C "$W/arc" -czf "$W/bad.tar.gz" m
msg=$("$SQ" embed "$W/bad.tar.gz" --input "$W/in.txt" 2>&1 >/dev/null)
[[ $msg == *"bad.tar.gz: m/config.json: invalid JSON"* && $msg != *squint-model-* ]] &&
  pass "archive member errors name the member" || fail "archive member error: $msg"
if command -v bsdtar >/dev/null; then
  (cd "$W" && bsdtar -a -cf m.zip m) && "$SQ" embed "$W/m.zip" --input "$W/in.txt" --output "$W/zip.npy" --quiet &&
    cmp -s "$W/zip.npy" "$W/a.npy" && pass "model from .zip" || fail "model from .zip"
fi

# Other storage dtypes and the bert. prefix load too.
for variant in "--dtype f16" "--dtype bf16" "--prefix bert."; do
  rm -rf "$W/v"
  "$GEN" "$W/v" --shape tiny --seed 3 $variant >/dev/null &&
    "$SQ" embed "$W/v" --input "$W/in.txt" --output "$W/v.npy" --quiet && pass "fixture $variant loads" || fail "fixture $variant"
done

# --- bad inputs: clear message naming the problem, exit 2, no output file ---
bad() { rm -rf "$W/bad"; cp -r "$W/m" "$W/bad"; }
ST=model.safetensors
Q=encoder.layer.0.attention.self.query.weight
for mode in truncate hlen-past-eof; do
  bad; python3 "$HERE/mutate_safetensors.py" "$W/m/$ST" "$W/bad/$ST" $mode
  expect_error "safetensors $mode" "$ST" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
done
bad; python3 "$HERE/mutate_safetensors.py" "$W/m/$ST" "$W/bad/$ST" dtype-i32 $Q
expect_error "wrong dtype" "dtype I32" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
bad; python3 "$HERE/mutate_safetensors.py" "$W/m/$ST" "$W/bad/$ST" reshape $Q
expect_error "shape mismatch" "has shape [16, 64], expected [32, 32]" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
bad; python3 "$HERE/mutate_safetensors.py" "$W/m/$ST" "$W/bad/$ST" rename $Q
expect_error "missing tensor" "missing tensor \"$Q\"" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
bad; python3 "$HERE/mutate_safetensors.py" "$W/m/$ST" "$W/bad/$ST" overlap $Q
expect_error "overlapping tensors" "overlapping" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
bad; sed -i 's/"model_type": *"bert"/"model_type": "gpt2"/' "$W/bad/config.json"
expect_error "non-BERT config" "model_type \"gpt2\" is not supported" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
bad; rm "$W/bad/$ST"
expect_error "no weights" "no model.safetensors" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
bad; rm "$W/bad/tokenizer.json" "$W/bad/vocab.txt"
expect_error "no tokenizer" "$W/bad" "$W/o.npy" -- "$SQ" embed "$W/bad" --input "$W/in.txt" --output "$W/o.npy"
: > "$W/empty.txt"
# Empty input is not an error (an empty partition of a pipeline): empty
# output, exit 0; an .npy of shape (0, dim).
"$SQ" embed "$W/m" --input "$W/empty.txt" --output "$W/o.npy" --quiet &&
  /usr/bin/python3 -c "import numpy as np,sys; a=np.load(sys.argv[1]); sys.exit(0 if a.shape==(0,32) and a.dtype==np.float32 else 1)" "$W/o.npy" &&
  pass "empty input: exit 0, .npy of shape (0, 32)" || fail "empty input"
rm -f "$W/o.npy"
out=$("$SQ" embed "$W/m" --input "$W/empty.txt" --quiet) && [[ -z $out ]] && pass "empty input: empty JSONL" || fail "empty input JSONL"
expect_error "missing input file" "$W/nope.txt" "$W/o.npy" -- "$SQ" embed "$W/m" --input "$W/nope.txt" --output "$W/o.npy"
expect_error "missing model" "$W/nomodel" "$W/o.npy" -- "$SQ" embed "$W/nomodel" --input "$W/in.txt" --output "$W/o.npy"
expect_error "unknown output format" "unknown output format" "$W/o.xyz" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/o.xyz"
expect_error "unwritable directory" "$W/ro/o.npy" "$W/ro/o.npy" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/ro/o.npy"
expect_error "full disk" "/dev/full" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output /dev/full --format npy
# Matryoshka: --dimensions 8 = the first 8 values of the full embedding,
# normalized again (the fixture's pooling normalizes)
"$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/full.npy" --quiet &&
  "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/d8.npy" --dimensions 8 --quiet &&
  /usr/bin/python3 -c "
import sys, numpy as np
f, d = np.load(sys.argv[1]), np.load(sys.argv[2])
t = f[:, :8] / np.linalg.norm(f[:, :8], axis=1, keepdims=True)
sys.exit(0 if d.shape == (f.shape[0], 8) and np.abs(d - t).max() < 1e-6 and np.abs(np.linalg.norm(d, axis=1) - 1).max() < 1e-6 else 1)" "$W/full.npy" "$W/d8.npy" &&
  pass "--dimensions 8: the first 8 values, normalized again" || fail "--dimensions 8"
expect_error "--dimensions 0" "--dimensions must be a positive integer" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --dimensions 0
expect_error "--dimensions over the width" "exceeds the model's embedding width" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --dimensions 65536
# output precision (sentence-transformers' quantize_embeddings: the formula
# of its quantization.py, here in numpy; squint matched the package itself
# bit for bit when it was built)
"$SQ" embed "$W/m" --input "$W/in.txt" --precision int8 --ranges-from "$W/in.txt" --ranges-out "$W/rg.npy" -o "$W/p8.npy" --quiet &&
  "$SQ" embed "$W/m" --input "$W/in.txt" --precision uint8 --ranges "$W/rg.npy" -o "$W/pu.npy" --quiet &&
  "$SQ" embed "$W/m" --input "$W/in.txt" --precision ubinary -o "$W/pb.npy" --quiet &&
  "$SQ" embed "$W/m" --input "$W/in.txt" --precision binary -o "$W/pbs.jsonl" --quiet &&
  /usr/bin/python3 -c "
import json, sys, numpy as np
W = sys.argv[1]
f, r = np.load(W + '/full.npy'), np.load(W + '/rg.npy')
ok = r.shape == (2, f.shape[1]) and np.array_equal(r[0], f.min(0)) and np.array_equal(r[1], f.max(0))
st = (r[1] - r[0]) / np.float32(255)
ok &= np.array_equal(np.load(W + '/p8.npy'), ((f - r[0]) / st - np.float32(128)).astype(np.int8))
ok &= np.array_equal(np.load(W + '/pu.npy'), ((f - r[0]) / st).astype(np.uint8))
ok &= np.array_equal(np.load(W + '/pb.npy'), np.packbits(f > 0, axis=-1))
b = np.array([json.loads(l)['embedding'] for l in open(W + '/pbs.jsonl')])
ok &= np.array_equal(b, np.packbits(f > 0, axis=-1).astype(int) - 128)
sys.exit(0 if ok else 1)" "$W" && pass "--precision int8 / uint8 / ubinary / binary: sentence-transformers' codes, ranges from texts and from a file" ||
  fail "--precision"
expect_error "int8 without ranges" "needs calibration ranges" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --precision int8
expect_error "ranges with float32" "apply to --precision int8 or uint8" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --ranges "$W/rg.npy"
expect_error "int8 to .f32" ".f32 holds float32 rows" "$W/x.f32" -- "$SQ" embed "$W/m" --input "$W/in.txt" --precision binary -o "$W/x.f32"
expect_error "ranges of another width" "ranges of shape [2, " "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --precision int8 --ranges "$W/rg.npy" --dimensions 8
expect_error "ranges and input both on stdin" "would both read standard input" "" -- "$SQ" embed "$W/m" --input - --precision int8 --ranges-from -
expect_error "an unknown precision" "--precision must be one of float32, int8, uint8, binary, ubinary" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --precision fp16
# issue 38 item 15: a file that is no model (a llama2.c .bin lands here) and
# a Llama folder say what they are, not "Unrecognized archive format"
head -c 4096 /dev/urandom >"$W/noise.bin"
expect_error "a file that is no model" "not a model squint embeds with: neither a .sqm, a checkpoint folder nor a .tar / .zip of one (a llama2.c .bin is a causal LM" "" \
  -- "$SQ" embed "$W/noise.bin" --input "$W/in.txt"
mkdir -p "$W/llamacfg"; printf '{"model_type": "llama", "architectures": ["LlamaForCausalLM"]}' >"$W/llamacfg/config.json"
expect_error "a Llama folder to embed" "is a causal LM without last-token pooling: squint embeds with a causal LM only when its sentence-transformers Pooling module pools the last token" "" \
  -- "$SQ" embed "$W/llamacfg" --input "$W/in.txt"
# issue 38 item 15: a full disk is named with its reason
for f in f32 jsonl; do
  expect_error "full disk ($f): the reason" "/dev/full: write failed: No space left on device" "" \
    -- "$SQ" embed "$W/m" --input "$W/in.txt" --output /dev/full --format $f
done
[[ -c /dev/full ]] && pass "/dev/full still a device" || fail "/dev/full replaced"
expect_error "--max-seq over model positions" "exceeds" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --max-seq 1000
# Existing output file is untouched by a failing run.
echo keep > "$W/keep.npy"
"$SQ" embed "$W/m" --input "$W/nope.txt" --output "$W/keep.npy" 2>/dev/null
[[ $(cat "$W/keep.npy") == keep ]] && pass "failed run leaves existing output untouched" || fail "existing output clobbered"

# --- sharded checkpoints (model.safetensors.index.json) ---
# The fixture split into two shards, its index padded with 200,000 names of
# absent tensors (an index may list far more names than a model reads; the
# shard list is de-duplicated in O(n log n): 10^5 names took minutes when it
# was quadratic): same embeddings as the single file.
mkdir -p "$W/sh"
cp "$W/m"/*.json "$W/m"/vocab.txt "$W/sh/" 2>/dev/null; cp -r "$W/m/1_Pooling" "$W/sh/" 2>/dev/null
/usr/bin/python3 - "$W/m/model.safetensors" "$W/sh" <<'PY' || fail "could not shard the fixture"
import json, struct, sys
src, out = sys.argv[1], sys.argv[2]
b = open(src, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; hdr = json.loads(b[8:8 + n]); data = b[8 + n:]
names = sorted(k for k in hdr if k != "__metadata__")
wm = {}
for part, chunk in enumerate((names[::2], names[1::2])):
    fn = f"model-{part + 1:05d}-of-00002.safetensors"; h = {}; blob = b""
    for k in chunk:
        s, e = hdr[k]["data_offsets"]; h[k] = dict(hdr[k], data_offsets=[len(blob), len(blob) + e - s]); blob += data[s:e]; wm[k] = fn
    hj = json.dumps(h).encode(); hj += b" " * (-len(hj) % 8)
    open(f"{out}/{fn}", "wb").write(struct.pack("<Q", len(hj)) + hj + blob)
for i in range(200000):
    wm[f"unused.{i}.weight"] = f"model-{i % 2 + 1:05d}-of-00002.safetensors"
json.dump({"metadata": {}, "weight_map": wm}, open(f"{out}/model.safetensors.index.json", "w"))
PY
"$SQ" embed "$W/sh" --input "$W/in.txt" --output "$W/sh.npy" --quiet 2>"$W/sh.err" &&
  cmp -s "$W/a.npy" "$W/sh.npy" && pass "two shards, 200,000-name index: the single file's embeddings" ||
  fail "sharded checkpoint: $(cat "$W/sh.err")"
/usr/bin/python3 -c "
import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['weight_map']['x.weight']='../escape.safetensors'; json.dump(d,open(p,'w'))" "$W/sh/model.safetensors.index.json"
expect_error "index naming a file outside the model" "plain file name" "" -- "$SQ" embed "$W/sh" --input "$W/in.txt"

# --- transformers' VERY_LARGE_INTEGER in tokenizer_config.json (real
# checkpoints carry it): an unknown length, ignored like any out-of-range one;
# the fixture's config.json limit (64 positions) then applies ---
rm -rf "$W/vl"; cp -r "$W/m" "$W/vl"
sed -i 's/"model_max_length": [0-9]*/"model_max_length": 1000000000000000019884624838656/' "$W/vl/tokenizer_config.json"
grep -q 1000000000000000019884624838656 "$W/vl/tokenizer_config.json" || fail "could not edit tokenizer_config.json"
"$SQ" embed "$W/vl" --input "$W/in.txt" --output "$W/vl.npy" --threads 1 --quiet 2>"$W/vl.err" &&
  cmp -s "$W/a.npy" "$W/vl.npy" && pass "model_max_length = VERY_LARGE_INTEGER is ignored (same embeddings)" ||
  fail "VERY_LARGE_INTEGER: $(cat "$W/vl.err")"

# --- text that is not UTF-8 is refused with its place, never dropped ---
printf 'good line\nbad \xff\xfe line\n' >"$W/bad-utf8.txt"
expect_error "invalid UTF-8 in --input" "bad-utf8.txt:2: invalid UTF-8 at column 5" "$W/u.npy" -- \
  "$SQ" embed "$W/m" --input "$W/bad-utf8.txt" --output "$W/u.npy"
expect_error "invalid UTF-8 in tokenize --input" "invalid UTF-8" "" -- \
  "$SQ" tokenize "$W/m" --input "$W/bad-utf8.txt"

# --- messages name what is wrong: an empty model file, an empty output path ---
: >"$W/empty.sqm"
expect_error "an empty file as MODEL" "empty.sqm: empty file" "" -- "$SQ" embed "$W/empty.sqm" --input "$W/in.txt"
expect_error "an empty --output" "output path is empty" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output ""

# --- an output that is the input (also through a symlink) is refused ---
printf '{"text":"one"}\n{"text":"two"}\n' >"$W/io.jsonl"; cp "$W/io.jsonl" "$W/io.keep"; ln -sf io.jsonl "$W/io-link.jsonl"
expect_error "--output is the --input" "is also an input" "" -- "$SQ" embed "$W/m" --input "$W/io.jsonl" --output "$W/io.jsonl"
expect_error "--output is a symlink to the --input" "is also an input" "" -- "$SQ" embed "$W/m" --input "$W/io.jsonl" --output "$W/io-link.jsonl"
cmp -s "$W/io.jsonl" "$W/io.keep" && pass "the input is untouched" || fail "the input was replaced"
# one rule for duplicate keys in every JSON squint reads (base/json_util.h
# SQ_JSON_FLAGS): a JSONL line with a key twice is refused, naming the line
printf '{"text":"one"}\n{"text":"two","text":"three"}\n' >"$W/dup.jsonl"
expect_error "embed: a JSONL line with a key twice" "dup.jsonl:2: invalid JSON: duplicate object key" \
  "$W/dup.npy" -- "$SQ" embed "$W/m" --input "$W/dup.jsonl" --output "$W/dup.npy"
expect_error "calibrate: a corpus line with a key twice" "dup.jsonl:2" "$W/dup.sqc" \
  -- "$SQ" calibrate "$W/m" --corpus "$W/dup.jsonl" --quiet -o "$W/dup.sqc"

# --- configuration files that are FIFOs are refused, never waited on ---
for f in config.json 1_Pooling/config.json; do
  rm -rf "$W/ff"; cp -r "$W/m" "$W/ff"; rm "$W/ff/$f"; mkfifo "$W/ff/$f"
  msg=$(timeout 20 "$SQ" embed "$W/ff" --input "$W/in.txt" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 && "$msg" == *"not a regular file"* ]] && pass "$f as a FIFO: refused ($msg)" ||
    fail "$f as a FIFO: exit $rc ($msg)"
done

# bench: a run, its per-op profile (every op the encoder runs has a row,
# the shares add up to the total), and the length errors.
out=$("$SQ" bench "$W/m" --batch 2 --seq 16 --iters 2 --warmup 0 --threads 1 --profile 2>&1)
if [[ $out == *"seq/s="* && $out == *"latency_ms="* ]] && /usr/bin/python3 -c '
import re, sys
rows = dict((m.group(1).strip(), float(m.group(3))) for m in
            re.finditer(r"^  (\S.{0,17}?)\s+([0-9.]+)\s+([0-9.]+)%$", sys.argv[1], re.M))
need = {"embeddings", "layernorm", "linear qkv", "linear attn_out", "linear ffn_up",
        "linear ffn_down", "attn Q.K^T", "softmax", "attn P.V", "gelu/relu", "other", "total"}
assert need <= set(rows), sorted(need - set(rows))
assert abs(sum(v for k, v in rows.items() if k != "total") - 100) < 0.5, rows
' "$out"; then pass "bench --profile: every op, shares sum to 100%"; else fail "bench --profile: $out"; fi
expect_error "bench --seq beyond the model" "--seq 100 exceeds the model's 64 positions" "" -- "$SQ" bench "$W/m" --seq 100

finish
