#!/usr/bin/env bash
# A causal LM reranking as Qwen3-Reranker does (libquant/run/lm_judge.h:
# Qwen3-Reranker's yes/no prompt, score = sigmoid(logit yes - logit no))
# through `squint rerank --pairs` against the float64 PyTorch oracle
# (torch_qwen3_rerank.py, its prompt written from the model card) at two
# shapes of gen_qwen3_fixture.py with the real Qwen3 tokenizer: tiny (f32,
# untied lm_head, 256 positions) and Qwen3-0.6B's layer shape (bf16, tied,
# 2 layers). 100 STS-B test pairs, the same queries with other sentences,
# and a document past the tiny shape's 256 positions (the pair cut at its
# end): 201 pairs at the tiny shape, 30 + 30 at the larger one (the float64
# oracle's time). The oracle without the empty <think> block and without the
# <Instruct> line must fail; the scores are the same bytes at 1 and 2
# threads; --instruction reaches the prompt. Exits 77 without
# /usr/bin/python3 + torch + numpy or the shared Qwen3 tokenizer.
# usage: check_qwen3_rerank.sh SQUINT
set -u
SQ=$1
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
stsb=${SQUINT_SHARED_DATA:-}/stsb-glue/original/sts-test.tsv
[[ -f $T/tokenizer.json && -f $stsb ]] || { echo "SKIP: qwen3-tokenizer or STS-B not found"; exit 77; }
$PY -c "import torch, numpy" 2>/dev/null || { echo "SKIP: $PY has no torch / numpy"; exit 77; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cut -f6,7 "$stsb" | head -100 | $PY -c '
import json, sys
rows = [l.rstrip("\n").split("\t") for l in sys.stdin]
out = [{"query": a, "document": b} for a, b in rows]
out += [{"query": a, "document": rows[(i + 37) % len(rows)][1]} for i, (a, _) in enumerate(rows)]
out.append({"query": rows[0][0], "document": "The quick brown fox jumps over the lazy dog. " * 40})
print("".join(json.dumps(o) + "\n" for o in out), end="")' >"$W/pairs.jsonl"
fails=0
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
for shape in tiny qwen3-0.6b-l2; do
  m=$W/$shape
  $PY "$here/../fixture/gen_qwen3_fixture.py" --shape "$shape" --tokenizer-dir "$T" "$m" >/dev/null ||
    { fail "fixture $shape"; continue; }
  pairs=$W/pairs.jsonl min=201
  if [[ $shape != tiny ]]; then
    sed -n '1,30p;101,130p' "$W/pairs.jsonl" >"$W/pairs60.jsonl"
    pairs=$W/pairs60.jsonl min=60
  fi
  out=$W/$shape.jsonl
  "$SQ" rerank "$m" --pairs "$pairs" --threads 2 --output "$out" || { fail "$shape: squint rerank"; continue; }
  "$SQ" rerank "$m" --pairs "$pairs" --threads 1 --output "$W/t1.jsonl" &&
    cmp -s "$out" "$W/t1.jsonl" || fail "$shape: 1 and 2 threads differ"
  echo "== $shape"
  "$PY" "$here/torch_qwen3_rerank.py" "$SQ" "$m" "$pairs" "$out" --min-pairs "$min" ||
    fail "$shape: the oracle check"
  if [[ $shape == tiny ]]; then # another instruction, in the prompt and in the oracle
    head -20 "$W/pairs.jsonl" >"$W/p20.jsonl"
    instr="Find a sentence that says the same thing"
    "$SQ" rerank "$m" --pairs "$W/p20.jsonl" --instruction "$instr" --output "$W/i.jsonl" &&
      "$PY" "$here/torch_qwen3_rerank.py" "$SQ" "$m" "$W/p20.jsonl" "$W/i.jsonl" --instruction "$instr" \
        >"$W/i.log" || { cat "$W/i.log"; fail "tiny: --instruction"; }
    grep "^ok   oracle" "$W/i.log"
  fi
  rm -rf "$m"
done
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
