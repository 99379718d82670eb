#!/usr/bin/env bash
# The main job on a bundled default: build squint, generate a deterministic
# BERT fixture checkpoint with planted outlier channels (bge-small vocabulary
# when ../shared/data has it), calibrate it on the bundled QASPER corpus,
# quantize it (SmoothQuant + int8) into a packed .sqm, verify and inspect
# that file, then run the .sqm on a few sentences with the int8 runtime and
# measure it against the fp32 model (embed-run with a cosine gate).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

out=out/demo
mkdir -p "$out"
vocab_args=()
shared="${SQUINT_SHARED_DATA:-../shared/data}"
if [[ -f "$shared/bge-small-en-v1.5/vocab.txt" ]]; then
  vocab_args=(--vocab "$shared/bge-small-en-v1.5/vocab.txt")
fi
rm -rf "$out/model"
build/tests/fixture/squint-gen-fixture "$out/model" --shape tiny --seed 1 --outliers 2 "${vocab_args[@]}"
build/squint calibrate "$out/model" --samples 200 -o "$out/model.sqc"
build/squint inspect "$out/model.sqc" --top 4 | tail -6
build/squint quantize "$out/model" --calib "$out/model.sqc" --recipe recipes/bert-generic.yaml -o "$out/model.sqm"
build/squint verify "$out/model.sqm"
build/squint inspect "$out/model.sqm" | sed -n '/^linear/,/^checksums/p'
cat > "$out/texts.txt" <<'TXT'
Quantized encoders make semantic search cheap on ordinary servers.
A cat sat on the mat.
The quick brown fox jumps over the lazy dog!
Post-training static quantization needs calibration data.
TXT
build/squint embed-run "$out/model.sqm" --input "$out/texts.txt" --reference "$out/model" \
  --gate cos_mean=0.99,cos_min=0.98 --output "$out/embeddings.npy" --report "$out/report.json"
build/squint embed "$out/model.sqm" --input "$out/texts.txt" --output "$out/embeddings.jsonl" --quiet
echo "demo: int8 embeddings in $out/embeddings.jsonl and .npy, accuracy report in $out/report.json"
head -c 300 "$out/embeddings.jsonl"; echo " ..."
