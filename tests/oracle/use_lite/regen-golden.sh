#!/bin/sh
# Regenerate tests/oracle/use_lite/golden/: Universal Sentence Encoder Lite
# embeddings from the model's own runtime (@tensorflow/tfjs, pure-JS CPU
# backend, driven by @energetic-ai/embeddings' tokenizer and embed()),
# installed here with npm (scripts disabled) into node_modules, which git
# ignores. The model files come from the shared data dir; no network except
# the npm registry for `npm ci`. Deterministic: a rerun gives identical bytes.
# Usage: tests/oracle/use_lite/regen-golden.sh [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${1:-${SQUINT_SHARED_DATA:-$here/../../../../shared/data}}
[ -d "$data/use-lite-tfjs" ] || { echo "regen-golden: no use-lite-tfjs in shared data dir $data" >&2; exit 1; }
command -v zstd >/dev/null || { echo "regen-golden: zstd is needed" >&2; exit 1; }
cd "$here"
npm ci --ignore-scripts --no-audit --no-fund
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node gen_golden.mjs "$data" "$tmp"
out=$here/golden
rm -rf "$out"
mkdir -p "$out/layers"
cp "$tmp/sentences.jsonl" "$tmp/tokens.jsonl" "$tmp/meta.json" "$out/"
cp "$tmp/layers/index.json" "$out/layers/"
zstd -q -19 -f "$tmp/embeddings.f32" -o "$out/embeddings.f32.zst"
for f in "$tmp"/layers/*.f32; do
  zstd -q -19 -f "$f" -o "$out/layers/$(basename "$f").zst"
done
echo "regen-golden: wrote $out ($(du -sk "$out" | cut -f1) KiB on disk)"
