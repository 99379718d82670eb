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
expect_error "empty input file" "no inputs" "$W/o.npy" -- "$SQ" embed "$W/m" --input "$W/empty.txt" --output "$W/o.npy"
expect_error "missing input file" "$W/nope.txt" "$W/o.npy" -- "$SQ" embed "$W/m" --input "$W/nope.txt" --output "$W/o.npy"
expect_error "missing model" "$W/nomodel" "$W/o.npy" -- "$SQ" embed "$W/nomodel" --input "$W/in.txt" --output "$W/o.npy"
expect_error "unknown output format" "unknown output format" "$W/o.xyz" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/o.xyz"
expect_error "unwritable directory" "$W/ro/o.npy" "$W/ro/o.npy" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/ro/o.npy"
expect_error "full disk" "/dev/full" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output /dev/full --format npy
[[ -c /dev/full ]] && pass "/dev/full still a device" || fail "/dev/full replaced"
expect_error "--max-seq over model positions" "exceeds" "" -- "$SQ" embed "$W/m" --input "$W/in.txt" --max-seq 1000
# Existing output file is untouched by a failing run.
echo keep > "$W/keep.npy"
"$SQ" embed "$W/m" --input "$W/empty.txt" --output "$W/keep.npy" 2>/dev/null
[[ $(cat "$W/keep.npy") == keep ]] && pass "failed run leaves existing output untouched" || fail "existing output clobbered"

finish
