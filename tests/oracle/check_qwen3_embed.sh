#!/usr/bin/env bash
# A Qwen3-Embedding-style causal embedding model (gen_qwen3_fixture.py
# --embedding: bare Qwen3Model names, a lasttoken Pooling module, Normalize,
# the query instruction in config_sentence_transformers.json, a tokenizer
# that appends <|endoftext|>) through `squint embed` against the float64
# PyTorch oracle (torch_qwen3_embed.py) at two shapes: tiny (f32) and
# Qwen3-0.6B's layer shape (bf16, 2 layers). 100 STS-B queries with the
# instruction prefix (--prompt query), 100 documents without, and a text
# past the tiny shape's 256 positions (truncated before the appended token;
# several 64-row prefill chunks); also the tiny shape untied and without an
# lm_head tensor (Qwen3-Embedding-8B's kind). Each wrong oracle (mean pooling; the
# appended token left out) must fail. The embeddings are the same bytes at
# 1 and 2 threads.
# Exits 77 without /usr/bin/python3 + torch + numpy or the shared Qwen3 tokenizer.
# usage: check_qwen3_embed.sh SQUINT
set -u
SQ=$1
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
stsb=${SQUINT_SHARED_DATA:-}/stsb-glue/original/sts-test.tsv
[[ -f $T/tokenizer.json && -f $stsb ]] || { echo "SKIP: qwen3-tokenizer or STS-B not found"; exit 77; }
$PY -c "import torch, numpy" 2>/dev/null || { echo "SKIP: $PY has no torch / numpy"; exit 77; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cut -f6,7 "$stsb" | tr "\t" "\n" | awk 'NF && !seen[$0]++' | head -200 >"$W/all"
head -100 "$W/all" >"$W/queries"
{ tail -n +101 "$W/all"; printf 'The quick brown fox jumps over the lazy dog again and again. %.0s' $(seq 1 40); echo; } >"$W/docs"
fails=0
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
for shape in tiny qwen3-0.6b-l2 tiny-untied; do
  m=$W/$shape
  untied=(); [[ $shape == *-untied ]] && untied=(--untied)
  $PY "$here/../fixture/gen_qwen3_fixture.py" --shape "${shape%-untied}" --tokenizer-dir "$T" --embedding \
      "${untied[@]}" "$m" >/dev/null ||
    { fail "fixture $shape"; continue; }
  runs=()
  for kind in queries docs; do
    prompt=(); [[ $kind == queries ]] && prompt=(--prompt query)
    out=$W/$shape-$kind
    "$SQ" embed "$m" --input "$W/$kind" "${prompt[@]}" --output "$out.npy" --tokens-output "$out.tok.jsonl" \
        --threads 2 || { fail "$shape $kind: squint embed"; continue; }
    "$SQ" embed "$m" --input "$W/$kind" "${prompt[@]}" --output "$out.t1.npy" --threads 1 &&
      cmp -s "$out.npy" "$out.t1.npy" || fail "$shape $kind: 1 and 2 threads differ"
    if [[ $kind == queries ]]; then # the instruction is the ids' start
      grep -q '"ids":\[641,1235,25,' "$out.tok.jsonl" || fail "$shape: no instruction prefix in the query ids"
    fi
    runs+=(--run "$out.tok.jsonl" "$out.npy")
  done
  echo "== $shape"
  "$PY" "$here/torch_qwen3_embed.py" "$m" "${runs[@]}" --min-inputs 100 || fail "$shape: the oracle check"
  rm -rf "$m"
done
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
