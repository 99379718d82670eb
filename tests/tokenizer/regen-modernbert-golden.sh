#!/bin/sh
# Regenerate the ModernBERT-shaped fixture and its goldens:
#  - modernbert-fixture/tokenizer.json.zst + tokenizer_config.json:
#    gen_modernbert_fixture.py (Hugging Face tokenizers' BpeTrainer on STS-B,
#    SST-2 train and SciFact; ModernBERT's id layout and added tokens);
#  - golden/modernbert.ids.zst: transformers.js (installed here with npm,
#    scripts disabled, into js/node_modules, which git ignores) with
#    [CLS] / [SEP] for every test text (js/gen_modernbert_golden.mjs);
#  - golden/modernbert-pairs.ids.zst: tokenizers' longest_first pairs, after
#    checking the untruncated pairs against transformers.js
#    (gen_modernbert_pairs.py).
# PYTHON must have tokenizers (default: out/cache/venv-ref, tokenizers 0.19.1).
# Usage: tests/tokenizer/regen-modernbert-golden.sh [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
py=${PYTHON:-$here/../../out/cache/venv-ref/bin/python}
[ -d "$data" ] || { echo "regen-modernbert-golden: no shared data dir at $data" >&2; exit 1; }
command -v zstd >/dev/null || { echo "regen-modernbert-golden: zstd is needed" >&2; exit 1; }
"$py" -c 'import tokenizers' || { echo "regen-modernbert-golden: $py has no tokenizers" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" "$here/gen_modernbert_fixture.py" "$data" "$tmp/modernbert-fixture"
zstd -q -19 -f "$tmp/modernbert-fixture/tokenizer.json" -o "$here/modernbert-fixture/tokenizer.json.zst"
cp "$tmp/modernbert-fixture/tokenizer_config.json" "$here/modernbert-fixture/tokenizer_config.json"
cd "$here/js"
[ -d node_modules/@huggingface/transformers ] || npm ci --ignore-scripts --no-audit --no-fund
node gen_modernbert_golden.mjs "$data" "$tmp/modernbert-fixture" "$tmp"
"$py" "$here/gen_modernbert_pairs.py" "$tmp/modernbert-fixture/tokenizer.json" "$tmp"
zstd -q -19 -f "$tmp/modernbert.ids" -o "$here/golden/modernbert.ids.zst"
zstd -q -19 -f "$tmp/modernbert-pairs.ids" -o "$here/golden/modernbert-pairs.ids.zst"
echo "regen-modernbert-golden: wrote the fixture and golden/modernbert{,-pairs}.ids.zst"
