#!/bin/sh
# Regenerate golden/qwen3.ids.zst: transformers.js (installed here with npm,
# scripts disabled, into js/node_modules, which git ignores) tokenizes every
# test text with the local Qwen3 tokenizer.json (shared data, read by path;
# no network to the Hugging Face hub). Usage:
# tests/tokenizer/regen-qwen3-golden.sh [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
[ -d "$data" ] || { echo "regen-qwen3-golden: no shared data dir at $data" >&2; exit 1; }
command -v zstd >/dev/null || { echo "regen-qwen3-golden: zstd is needed" >&2; exit 1; }
cd "$here/js"
npm ci --ignore-scripts --no-audit --no-fund
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node gen_qwen3_golden.mjs "$data" "$tmp"
zstd -q -19 -f "$tmp/qwen3.ids" -o "$here/golden/qwen3.ids.zst"
echo "regen-qwen3-golden: wrote $here/golden/qwen3.ids.zst"
