#!/usr/bin/env bash
# squint's decoder on Hugging Face Qwen3ForCausalLM folders against the
# PyTorch oracle written from the Qwen3 architecture (torch_qwen3.py: float64,
# its own safetensors reader, q/k RMSNorm per head before rotate_half RoPE,
# head_dim decoupled from hidden): logits to 1e-4 at two shapes of
# gen_qwen3_fixture.py with the real Qwen3 tokenizer:
#   - tiny (hidden 64, attention 4 x 32 = 128 wide, untied, f32);
#   - Qwen3-0.6B's layer shape (hidden 1024, 16 / 8 heads of 128, ffn 3072,
#     tied 151936-row vocabulary, bf16) with 2 layers;
# and the oracle without the q/k norm must fail on both (one oracle run
# checks both). Exits 77 without
# /usr/bin/python3 + torch + numpy or without the shared Qwen3 tokenizer.
# usage: check_qwen3_oracle.sh DEC_LOGITS
set -u
DL=$1
here=$(cd "$(dirname "$0")" && pwd)
FX=$here/../fixture
PY=/usr/bin/python3
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
[[ -f $T/tokenizer.json && -f $T/tokenizer_config.json ]] || { echo "SKIP: qwen3-tokenizer not found"; exit 77; }
$PY -c "import torch, numpy" 2>/dev/null || { echo "SKIP: $PY has no torch / numpy"; exit 77; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fails=0
check() { # SHAPE TEXT...: logits of the texts, then the oracle, then the wrong oracle
  local shape=$1 m=$W/$1
  shift
  $PY "$FX/gen_qwen3_fixture.py" --shape "$shape" --tokenizer-dir "$T" "$m" >/dev/null ||
    { echo "FAIL: fixture $shape"; fails=$((fails + 1)); return; }
  : >"$W/ids"; : >"$W/logits"
  for text in "$@"; do
    "$DL" "$m" - "$text" "$W/i" "$W/l" 7 || { echo "FAIL: dec_logits $shape"; fails=$((fails + 1)); return; }
    cat "$W/i" >>"$W/ids"; cat "$W/l" >>"$W/logits"
  done
  if $PY "$here/torch_qwen3.py" "$m" --ids "$W/ids" --logits "$W/logits" --tol 1e-4 --and-wrong >"$W/out"; then
    echo "ok   - $shape: $(tail -1 "$W/out") (the wrong oracle, no q/k norm, fails)"
  else
    echo "FAIL - $shape: logits differ from the oracle, or the wrong oracle passed"; cat "$W/out"; fails=$((fails + 1))
  fi
  rm -rf "$m"
}
long="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends, and every day she found something new: a red leaf, a smooth stone, a bird that sang. 你好，世界！ <think>reasoning</think> The end."
check tiny "!" "Hello, my name is Qwen." "$long" "def f(x):\n    return x ** 2  # 42"
check qwen3-0.6b-l2 "Hello, my name is Qwen." "$long"
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
