#!/bin/sh
# Regenerate golden/bge-en-v1.5.ids.zst: transformers.js (installed here with
# npm, scripts disabled, into js/node_modules, which git ignores) tokenizes
# every test sentence with the local bge tokenizer files; no network to the
# Hugging Face hub. Usage: tests/tokenizer/regen-golden.sh [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
[ -d "$data" ] || { echo "regen-golden: no shared data dir at $data" >&2; exit 1; }
command -v zstd >/dev/null || { echo "regen-golden: zstd is needed" >&2; exit 1; }
cd "$here/js"
npm ci --ignore-scripts --no-audit --no-fund
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node gen_golden.mjs "$data" "$tmp"
zstd -q -19 -f "$tmp/bge-en-v1.5.ids" -o "$here/golden/bge-en-v1.5.ids.zst"
echo "regen-golden: wrote $here/golden/bge-en-v1.5.ids.zst"
