#!/usr/bin/env bash
# The main job, on a real trained encoder by default: build squint, take
# Universal Sentence Encoder Lite as TensorFlow.js exports it
# (../shared/data/use-lite-tfjs), calibrate it on the bundled QASPER corpus,
# quantize it with its shipped recipe (SmoothQuant + int8, activation zero
# points, the out-of-range guard) into a packed .sqm, verify and inspect
# that file, then run the .sqm on 1,000 out-of-domain STS-B sentences and
# measure it against the fp32 model with the recipe's gates (worst inputs
# included), and write the int8 embeddings.
# Without the shared data it does the same on a generated bge-small-shaped
# BERT fixture with the outlier mechanisms of trained BERTs.
# usage: scripts/demo.sh [MODEL_DIR]   (SQUINT_SHARED_DATA: where the data is)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

out=out/demo
mkdir -p "$out"
shared="${SQUINT_SHARED_DATA:-../shared/data}"
model=${1:-$shared/use-lite-tfjs}
recipe=recipes/use-lite.yaml
if [[ ! -f "$model/model.json" && ! -f "$model/config.json" ]]; then
  echo "demo: no model at $model; using a generated bge-small-shaped fixture instead"
  model=$out/fixture
  vocab_args=()
  [[ -f "$shared/bge-small-en-v1.5/vocab.txt" ]] && vocab_args=(--vocab "$shared/bge-small-en-v1.5/vocab.txt")
  rm -rf "$model"
  build/tests/fixture/squint-gen-fixture "$model" --shape bge-small --outliers 2 "${vocab_args[@]}"
  recipe=recipes/bge-small-en-v1.5.yaml
elif [[ -f "$model/config.json" ]]; then
  recipe=recipes/bert-generic.yaml
fi
texts="$out/texts.txt"
if [[ -f "$shared/stsb-glue/original/sts-dev.tsv" ]]; then
  head -500 "$shared/stsb-glue/original/sts-dev.tsv" | cut -f6,7 | tr '\t' '\n' >"$texts"
else
  cat >"$texts" <<'TXT'
Quantized encoders make semantic search cheap on ordinary servers.
A cat sat on the mat.
The quick brown fox jumps over the lazy dog!
Post-training static quantization needs calibration data.
TXT
fi
build/squint calibrate "$model" --samples 256 -o "$out/model.sqc"
build/squint inspect "$out/model.sqc" --top 4 | tail -6
build/squint quantize "$model" --calib "$out/model.sqc" --recipe "$recipe" -o "$out/model.sqm"
build/squint verify "$out/model.sqm"
build/squint inspect "$out/model.sqm" | sed -n '/^activations/p;/^linear/,/^checksums/p'
build/squint embed-run "$out/model.sqm" --input "$texts" --reference "$model" --recipe "$recipe" \
  --output "$out/embeddings.npy" --report "$out/report.json"
build/squint embed "$out/model.sqm" --input "$texts" --output "$out/embeddings.jsonl" --quiet
echo "demo: $model -> $out/model.sqm ($(stat -c %s "$out/model.sqm") bytes); int8 embeddings of" \
     "$(wc -l <"$texts") texts in $out/embeddings.jsonl and .npy; accuracy report in $out/report.json"
head -c 200 "$out/embeddings.jsonl"; echo " ..."
