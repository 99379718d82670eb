#!/usr/bin/env bash
# squint's decoder on Hugging Face LlamaForCausalLM folders against the
# PyTorch oracle written for HF's layout (torch_llama_hf.py: its own
# safetensors reader, rotate_half RoPE, float64): logits to 1e-4 on
#   - the small GQA fixture (gen_llama_fixture.py: 8 heads / 2 kv heads,
#     untied lm_head, rope_theta 500000), f32 and bf16;
#   - stories260K written in the HF layout (llama2c_to_hf.py), up to 400
#     tokens;
# and the oracle made deliberately wrong (llama2.c's adjacent-pair RoPE on HF
# weights) must fail on both. Exits 77 without /usr/bin/python3 + torch +
# numpy or without the shared data.
# usage: check_llama_hf_oracle.sh DEC_LOGITS
set -u
DL=$1
here=$(cd "$(dirname "$0")" && pwd)
FX=$here/../fixture
PY=/usr/bin/python3
D=${SQUINT_SHARED_DATA:-}/stories260K
S=${SQUINT_SHARED_DATA:-}/tinystories-sample/TinyStories-valid-head.txt
[[ -f $D/stories260K.bin && -f $S ]] || { echo "SKIP: stories260K not found"; exit 77; }
$PY -c "import torch, numpy" 2>/dev/null || { echo "SKIP: $PY has no torch / numpy"; exit 77; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
$PY "$FX/gen_llama_fixture.py" --shape gqa-small --tokenizer "$D/tok512.bin" "$W/gqa" >/dev/null &&
$PY "$FX/gen_llama_fixture.py" --shape gqa-small --dtype bf16 --tokenizer "$D/tok512.bin" "$W/gqa-bf16" >/dev/null &&
$PY "$FX/llama2c_to_hf.py" --tokenizer "$D/tok512.bin" --checkpoint "$D/stories260K.bin" "$W/s260k" ||
  { echo "FAIL: fixtures"; exit 1; }
check() { # MODEL MAXCHARS: logits of a few texts, then the oracle, then the wrong oracle
  local m=$1 max=$2
  : >"$W/ids"; : >"$W/logits"
  while IFS= read -r text; do
    "$DL" "$m" - "${text:0:$max}" "$W/i" "$W/l" 7 || { echo "FAIL: dec_logits $m"; fails=$((fails + 1)); return; }
    cat "$W/i" >>"$W/ids"; cat "$W/l" >>"$W/logits"
  done < <(printf '%s\n' "" "Once upon a time, there was a dog named Max." "$(sed -n 2p "$S")" "$(sed -n 1p "$S")")
  if $PY "$here/torch_llama_hf.py" "$m" --ids "$W/ids" --logits "$W/logits" --tol 1e-4 >"$W/out"; then
    echo "ok   - $(basename "$m"): $(sort -t' ' -k6 -g "$W/out" | tail -1)"
  else
    echo "FAIL - $(basename "$m"): logits differ from the oracle"; cat "$W/out"; fails=$((fails + 1))
  fi
  if $PY "$here/torch_llama_hf.py" "$m" --ids "$W/ids" --logits "$W/logits" --tol 1e-4 --wrong-rope >"$W/out"; then
    echo "FAIL - $(basename "$m"): the wrong oracle (adjacent-pair RoPE) passed"; fails=$((fails + 1))
  else
    echo "ok   - $(basename "$m"): the wrong oracle fails ($(sort -t' ' -k6 -g "$W/out" | tail -1))"
  fi
}
check "$W/gqa" 200        # 128 positions: texts cut to 200 characters
check "$W/gqa-bf16" 200
check "$W/s260k" 100000
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
