#!/usr/bin/env bash
# squint's decoder against the PyTorch oracle (torch_llama.py, float64 from
# torch primitives, its own reader of the llama2.c checkpoint): logits of
# stories260K for a few sequences (BOS alone, a prompt, a held-out story, a
# 400-token story: positions past the greedy reference's 257) to 1e-4.
# Exits 77 without /usr/bin/python3 + torch or without the shared data.
# usage: check_llama_oracle.sh DEC_LOGITS
set -u
DL=$1
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
D=${SQUINT_SHARED_DATA:-}/stories260K
S=${SQUINT_SHARED_DATA:-}/tinystories-sample/TinyStories-valid-head.txt
[[ -f $D/stories260K.bin && -f $S ]] || { echo "SKIP: stories260K not found"; exit 77; }
$PY -c "import torch" 2>/dev/null || { echo "SKIP: $PY has no torch"; exit 77; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
: >"$W/ids"; : >"$W/logits"
n=0
while IFS= read -r text; do
  "$DL" "$D/stories260K.bin" "$D/tok512.bin" "$text" "$W/i" "$W/l" 7 || { echo "FAIL: dec_logits"; exit 1; }
  cat "$W/i" >>"$W/ids"; cat "$W/l" >>"$W/logits"; n=$((n + 1))
done < <(printf '%s\n' "" "Once upon a time, there was a dog named Max." "$(sed -n 2p "$S")" "$(sed -n 1p "$S")")
$PY "$here/torch_llama.py" "$D/stories260K.bin" --ids "$W/ids" --logits "$W/logits" --tol 1e-4 || {
  echo "FAIL: logits differ from the oracle"; exit 1; }
echo "ok - $n sequences within 1e-4 of the oracle"
