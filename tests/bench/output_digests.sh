#!/usr/bin/env bash
# The outputs a refactor must not change: every file squint writes for the
# fixtures and the real models (.sqc, .sqm, embeddings, scores, token ids,
# generated text, perplexity), listed with its sha256, one line per file.
# Run it with the build before and after a change, then compare the lists:
#   tests/bench/output_digests.sh OLD/squint OLD/squint-gen-fixture /tmp/before
#   tests/bench/output_digests.sh build/squint build/tests/fixture/squint-gen-fixture /tmp/after
#   diff /tmp/before/SHA256SUMS /tmp/after/SHA256SUMS && echo identical
# Real models are used where present (USE Lite and stories260K under
# SHARED_DATA, all-MiniLM-L6-v2 in out/cache/models); each one absent is said.
# Takes ~20 s on 2 cores.
# usage: tests/bench/output_digests.sh SQUINT GEN_FIXTURE OUTDIR [SHARED_DATA]
set -uo pipefail
SQ=$(realpath "$1") GEN=$(realpath "$2") OUT=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
data=${4:-${SQUINT_SHARED_DATA:-$root/../shared/data}}
R=$root/recipes
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
cd "$OUT" || exit 1
rm -rf ./*.sqc ./*.sqm ./*.npy ./*.txt ./*.json* ./*.yaml hf gqa SHA256SUMS
export SOURCE_DATE_EPOCH=0 SQUINT_THREAD_MIN_NS=0 SQUINT_DATA=$root/calib/data
fails=0
run() { # NAME -- command...: run it, say when it fails
  local name=$1; shift 2
  if ! "$@" >"$name.log" 2>&1; then echo "FAIL: $name: $(tail -n 2 "$name.log")"; fails=$((fails + 1)); fi
}
texts=$OUT/texts.txt
printf '%s\n' "the cat sat on the mat" "a quick brown fox jumps over the lazy dog" \
  "river water is cold at night" "the big red car drives to the city" "music" \
  "Once upon a time there was a small dog." >"$texts"

# BERT fixture with outlier channels: int8 defaults, int4-g128, mixed
"$GEN" --shape tiny --layers 2 --hidden 64 --heads 4 --ffn 128 --outliers 2 bert >/dev/null
run bert-calib -- "$SQ" calibrate bert --samples 32 --threads 2 --quiet -o bert.sqc
run bert-int8 -- "$SQ" quantize bert --calib bert.sqc -o bert-int8.sqm --threads 2
cat >int4.yaml <<'EOF'
version: 1
weights: {type: int4-g128}
EOF
cat >mixed.yaml <<'EOF'
version: 1
weights: {type: int8}
overrides:
  - {match: "layer.*.ffn_*", type: int4-g128}
EOF
run bert-int4 -- "$SQ" quantize bert --calib bert.sqc --recipe int4.yaml -o bert-int4.sqm --threads 2
run bert-mixed -- "$SQ" quantize bert --calib bert.sqc --recipe mixed.yaml -o bert-mixed.sqm --threads 2
for m in bert bert-int8.sqm bert-int4.sqm bert-mixed.sqm; do
  run "emb-$m" -- "$SQ" embed "$m" --input "$texts" -o "emb-${m%.sqm}.npy" --threads 2 --quiet
  run "tok-$m" -- sh -c "'$SQ' tokenize '$m' --input '$texts' >tok-${m%.sqm}.jsonl"
done

# cross-encoder fixture: pair calibration, int8, rerank scores
"$GEN" --shape tiny --layers 2 --hidden 64 --heads 4 --ffn 128 --outliers 2 \
  --cross-encoder 1 --ce-activation sigmoid ce >/dev/null
run ce-calib -- "$SQ" calibrate ce --samples 32 --threads 2 --quiet -o ce.sqc
run ce-int8 -- "$SQ" quantize ce --calib ce.sqc -o ce-int8.sqm --threads 2
for m in ce ce-int8.sqm; do
  run "rerank-$m" -- sh -c "'$SQ' rerank '$m' --query 'the cat' --docs '$texts' --threads 2 >rerank-${m%.sqm}.json"
done

# a stored classification head (SST-2 sentences), an outlier recipe, bf16 and
# int8 attention: the .sqm rows the recipes above do not write
SST=$data/sst2-glue/train.tsv
if [[ -f $SST ]]; then
  head -n 200 "$SST" >sst.tsv
  run head-train -- "$SQ" train-head bert --train sst.tsv --quiet -o head.json
  run bert-head -- "$SQ" quantize bert --calib bert.sqc --head head.json -o bert-head.sqm --threads 2
else echo "absent: SST-2 ($SST)"; fi
printf 'version: 1\noutliers: {enabled: true, ratio: 2, max_channels: 4}\n' >outl.yaml
run bert-outl -- "$SQ" quantize bert --calib bert.sqc --recipe outl.yaml -o bert-outl.sqm --threads 2
for a in bf16 int8; do
  printf 'version: 1\nattention: {matmul: %s}\n' "$a" >"att-$a.yaml"
  run "bert-att-$a" -- "$SQ" quantize bert --calib bert.sqc --recipe "att-$a.yaml" -o "bert-att-$a.sqm" --threads 2
  run "emb-bert-att-$a" -- "$SQ" embed "bert-att-$a.sqm" --input "$texts" -o "emb-bert-att-$a.npy" --threads 2 --quiet
done

# USE Lite (real): int8 (its recipe), int4-g128, mixed
U=$data/use-lite-tfjs
if [[ -d $U ]]; then
  run use-calib -- "$SQ" calibrate "$U" --samples 64 --threads 2 --quiet -o use.sqc
  run use-int8 -- "$SQ" quantize "$U" --calib use.sqc --recipe "$R/use-lite.yaml" -o use-int8.sqm --threads 2
  printf 'version: 1\nmodel: {architecture: t2t}\nweights: {type: int4-g128}\n' >use-int4.yaml
  run use-int4 -- "$SQ" quantize "$U" --calib use.sqc --recipe use-int4.yaml -o use-int4.sqm --threads 2
  printf 'version: 1\nmodel: {architecture: t2t}\noverrides:\n  - {match: "layer.*.ffn_*", type: int4-g128}\n' >use-mixed.yaml
  run use-mixed -- "$SQ" quantize "$U" --calib use.sqc --recipe use-mixed.yaml -o use-mixed.sqm --threads 2
  for m in "$U" use-int8.sqm use-int4.sqm use-mixed.sqm; do
    b=$(basename "${m%.sqm}")
    run "emb-$b" -- "$SQ" embed "$m" --input "$texts" -o "emb-$b.npy" --threads 2 --quiet
  done
else echo "absent: USE Lite ($U)"; fi

# stories260K (real decoder): fp32 / int8 / int4 generate and perplexity
S=$data/stories260K T=$data/tinystories-sample/TinyStories-valid-head.txt
if [[ -f $S/stories260K.bin && -f $T ]]; then
  head -n 9 "$T" >calib-stories.txt; tail -n 3 "$T" >held-stories.txt
  run st-calib -- "$SQ" calibrate "$S/stories260K.bin" --corpus calib-stories.txt --samples 0 --window --threads 1 --quiet -o st.sqc
  run st-int8 -- "$SQ" quantize "$S/stories260K.bin" --calib st.sqc --recipe "$R/stories260K-int8.yaml" -o st-int8.sqm --threads 2
  run st-int4 -- "$SQ" quantize "$S/stories260K.bin" --calib st.sqc --recipe "$R/stories260K-int4.yaml" --dynamic-acts -o st-int4.sqm --threads 2
  for a in bf16 int8; do # decoder attention (int8: the quantized KV cache)
    { cat "$R/stories260K-int8.yaml"; printf 'attention:\n  matmul: %s\n' "$a"; } >"st-att-$a.yaml"
    run "st-att-$a" -- "$SQ" quantize "$S/stories260K.bin" --calib st.sqc --recipe "st-att-$a.yaml" -o "st-att-$a.sqm" --threads 2
  done
  # the Hugging Face layout (hf-bpe merges) and an untied GQA fixture (numpy)
  PY=/usr/bin/python3 FX=$root/tests/fixture
  if [[ -x $PY ]] && $PY -c 'import numpy' 2>/dev/null; then
    $PY "$FX/llama2c_to_hf.py" --tokenizer "$S/tok512.bin" --checkpoint "$S/stories260K.bin" hf >/dev/null
    $PY "$FX/gen_llama_fixture.py" --shape gqa-small --tokenizer "$S/tok512.bin" gqa >/dev/null
    for m in hf gqa; do
      run "$m-calib" -- "$SQ" calibrate "$m" --corpus calib-stories.txt --samples 0 --window --threads 1 --quiet -o "$m.sqc"
      run "$m-int8" -- "$SQ" quantize "$m" --calib "$m.sqc" --recipe "$R/stories260K-int8.yaml" -o "$m-int8.sqm" --threads 2
    done
    sed '/^classifier:/,$d' "$R/stories260K-int8.yaml" >c32.yaml
    run gqa-c32 -- "$SQ" quantize gqa --calib gqa.sqc --recipe c32.yaml -o gqa-c32.sqm --threads 2
  else echo "absent: /usr/bin/python3 with numpy (the HF and GQA decoder fixtures)"; fi
  for m in "$S/stories260K.bin" st-int8.sqm st-int4.sqm st-att-bf16.sqm st-att-int8.sqm; do
    b=$(basename "${m%.*}")
    run "gen-$b" -- sh -c "'$SQ' generate '$m' --prompt 'Once upon a time' --max-tokens 96 --threads 2 --quiet >gen-$b.txt"
    run "ppl-$b" -- sh -c "'$SQ' perplexity '$m' --input held-stories.txt --docs lines --threads 2 --json | sed 's/, \"seconds\": [0-9.e+-]*//' >ppl-$b.json"
  done
else echo "absent: stories260K ($S)"; fi

# all-MiniLM-L6-v2 (real, fetched by scripts/fetch_model.py)
L=$root/out/cache/models/all-MiniLM-L6-v2
if [[ -f $L/model.safetensors ]]; then
  run lm-calib -- "$SQ" calibrate "$L" --samples 64 --threads 2 --quiet -o lm.sqc
  run lm-int8 -- "$SQ" quantize "$L" --calib lm.sqc --recipe "$R/bert-generic.yaml" -o lm-int8.sqm --threads 2
  for m in "$L" lm-int8.sqm; do
    b=$(basename "${m%.sqm}")
    run "emb-$b" -- "$SQ" embed "$m" --input "$texts" -o "emb-$b.npy" --threads 2 --quiet
  done
else echo "absent: all-MiniLM-L6-v2 ($L; scripts/fetch_model.py all-MiniLM-L6-v2)"; fi

sha256sum ./*.sqc ./*.sqm ./*.npy ./*.jsonl ./*.json ./gen-*.txt 2>/dev/null | sort -k2 >SHA256SUMS
echo "$(wc -l <SHA256SUMS) files in $OUT/SHA256SUMS, $fails failure(s)"
[[ $fails -eq 0 ]]
