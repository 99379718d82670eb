#!/bin/sh
# Compare squint's fp32 Universal Sentence Encoder Lite embeddings with the
# model's own runtime (@energetic-ai/embeddings' embed() on @tensorflow/tfjs'
# pure-JS CPU backend, see lib.mjs) on ALL sentences of STS-B original
# sts-test (fields 5 and 6: 2,758) and SST-2 dev (872), extracted as in
# tests/tokenizer/sentences.c. Prints the sentence count, max |diff| over all
# elements (and the sentence holding it), min and mean cosine, and token-id
# mismatches; exits 1 if max |diff| > 1e-4 or min cosine < 0.99999.
# Writes only to a temporary directory. Needs node_modules here
# (regen-golden.sh installs it). tfjs is slow: minutes.
# Usage: tests/oracle/use_lite/full_compare.sh [--squint build/squint] [shared-data-dir]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
sq=$here/../../../build/squint
if [ "${1:-}" = --squint ]; then
  [ $# -ge 2 ] || { echo "full_compare: --squint needs a path" >&2; exit 2; }
  sq=$2; shift 2
fi
data=${1:-${SQUINT_SHARED_DATA:-$here/../../../../shared/data}}
[ -f "$data/use-lite-tfjs/model.json" ] || { echo "full_compare: no use-lite-tfjs in $data" >&2; exit 2; }
[ -x "$sq" ] || { echo "full_compare: no squint binary at $sq" >&2; exit 2; }
[ -d "$here/node_modules/@tensorflow/tfjs" ] || { echo "full_compare: run regen-golden.sh (npm ci) first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
start=$(date +%s)
node "$here/embed_all.mjs" extract "$data" "$tmp"
t=$(date +%s)
"$sq" embed "$data/use-lite-tfjs" --input "$tmp/sentences.jsonl" --format f32 \
  --output "$tmp/squint.f32" --tokens-output "$tmp/squint.ids.jsonl" --quiet
echo "squint: $(( $(date +%s) - t )) s"
node "$here/embed_all.mjs" embed "$data" "$tmp"
rc=0
node "$here/embed_all.mjs" compare "$tmp" || rc=$?
echo "total: $(( $(date +%s) - start )) s"
exit $rc
