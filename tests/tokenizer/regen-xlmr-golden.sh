#!/bin/sh
# Regenerate golden/xlmr.ids.zst. The tokenizer.json is the one
# scripts/fetch_xlmr_tokenizer.py assembles (out/cache/xlmr-tokenizer). Both
# Hugging Face implementations encode every text: transformers.js (npm ci into
# js/node_modules, scripts disabled) and tokenizers (Rust, PyPI, into a
# throwaway venv); the golden holds Rust's ids and its header lists every text
# where transformers.js disagrees. Local files only, no hub access.
# Usage: tests/tokenizer/regen-xlmr-golden.sh [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${1:-${SQUINT_SHARED_DATA:-$root/../shared/data}}
[ -d "$data" ] || { echo "regen-xlmr-golden: no shared data dir at $data" >&2; exit 1; }
command -v zstd >/dev/null || { echo "regen-xlmr-golden: zstd is needed" >&2; exit 1; }
tokdir=$(python3 "$root/scripts/fetch_xlmr_tokenizer.py")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet tokenizers==0.21.1
cd "$here/js"
npm ci --ignore-scripts --no-audit --no-fund
node gen_xlmr_golden.mjs "$data" "$tokdir" "$tmp"
"$tmp/venv/bin/python" "$here/xlmr_rust_ids.py" "$tokdir/tokenizer.json" "$tmp/xlmr.js.ids" \
  "$tmp/xlmr.texts.jsonl" "$tmp/xlmr.ids"
zstd -q -19 -f "$tmp/xlmr.ids" -o "$here/golden/xlmr.ids.zst"
echo "regen-xlmr-golden: wrote $here/golden/xlmr.ids.zst"
