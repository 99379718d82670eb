#!/bin/sh
# Regenerate golden/use-lite.ids.zst: the Universal Sentence Encoder Lite JS
# tokenizer (@energetic-ai/embeddings, pinned in use_js/package.json, installed
# there with npm, scripts disabled, into use_js/node_modules, which git
# ignores) tokenizes every test sentence with the shared vocab.json; nothing
# is fetched at run time. The ids depend on node's ICU (NFKC): the header
# records node's Unicode version, which should match tokenizers/unicode_nfkc_data.h.
# Usage: tests/tokenizer/regen-use-golden.sh [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
[ -d "$data" ] || { echo "regen-use-golden: no shared data dir at $data" >&2; exit 1; }
command -v zstd >/dev/null || { echo "regen-use-golden: zstd is needed" >&2; exit 1; }
cd "$here/use_js"
npm ci --ignore-scripts --no-audit --no-fund
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node gen_golden.mjs "$data" "$tmp"
zstd -q -19 -f "$tmp/use-lite.ids" -o "$here/golden/use-lite.ids.zst"
echo "regen-use-golden: wrote $here/golden/use-lite.ids.zst"
