#!/usr/bin/env python3
"""The PyTorch oracle of a causal LM reranking as Qwen3-Reranker does.

Each (query, document) pair is put in the prompt of Qwen3-Reranker's model
card (written here from the card, not from squint's code):

  <|im_start|>system\\nJudge whether the Document meets the requirements based
  on the Query and the Instruct provided. Note that the answer can only be
  "yes" or "no".<|im_end|>\\n<|im_start|>user\\n
  <Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {document}
  <|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n

the middle part cut at its end to fit max_length (min(8192, the model's
positions)) with the fixed parts; the pair's logit is the last position's
logit("yes") - logit("no") (ids from tokenizer.json's vocabulary), its score
the sigmoid of that (softmax over the two, as the card computes it).
torch_qwen3.py's float64 forward gives the final hidden state; the LM head
rows (lm_head, or the tied embedding) give the two logits.

The texts are turned into ids by `squint tokenize` (the tokenizer itself is
checked against transformers.js on 10,000+ texts, tests/golden): the whole
prompt where it fits, which must equal the three parts tokenized apart (the
card's code, and squint's); the parts where it is cut.

  torch_qwen3_rerank.py SQUINT MODEL_DIR PAIRS.jsonl SQUINT_OUT.jsonl
                        [--instruction T] [--tol 1e-4] [--min-pairs N]

Also two wrong oracles on the first 20 pairs, which must fail: the prompt
without the empty <think> block, and without the <Instruct> line. Prints the
worst |difference| and the spread of the oracle's logits (pairs whose scores
differ); exit 0 when the oracle agrees and both wrong ones do not, else 1.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_qwen3 import forward, lm_head, load  # noqa: E402

SYSTEM = ('<|im_start|>system\nJudge whether the Document meets the requirements based on the '
          'Query and the Instruct provided. Note that the answer can only be "yes" or "no".'
          '<|im_end|>\n<|im_start|>user\n')
SUFFIX = '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'
INSTRUCTION = 'Given a web search query, retrieve relevant passages that answer the query'


def content(q, d, instruction):
    if instruction is None:  # a wrong oracle: the <Instruct> line left out
        return f'<Query>: {q}\n<Document>: {d}'
    return f'<Instruct>: {instruction}\n<Query>: {q}\n<Document>: {d}'


def tokenize(squint, model, texts):
    with tempfile.NamedTemporaryFile('w', suffix='.jsonl', delete=False) as f:
        for t in texts:
            f.write(json.dumps({'text': t}) + '\n')
        path = f.name
    try:
        out = subprocess.run([squint, 'tokenize', model, '--input', path, '--field', 'text',
                              '--ids-only', '--max-seq', '1000000'], check=True,
                             capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    return [json.loads(line)['ids'] for line in out.splitlines() if line.strip()]


def prompts(squint, model, pairs, max_len, instruction, suffix=SUFFIX):
    pre, suf = tokenize(squint, model, [SYSTEM, suffix])
    mids = tokenize(squint, model, [content(q, d, instruction) for q, d in pairs])
    body = max_len - len(pre) - len(suf)
    seqs = [pre + m[:body] + suf for m in mids]
    whole = [i for i, m in enumerate(mids) if len(m) <= body]
    if suffix == SUFFIX and instruction is not None:
        full = tokenize(squint, model, [SYSTEM + content(*pairs[i], instruction) + SUFFIX
                                        for i in whole])
        bad = [i for i, f in zip(whole, full) if f != seqs[i]]
        if bad:
            raise SystemExit(f'FAIL: pair {bad[0]}: the whole prompt tokenizes differently '
                             f'from its three parts')
    return seqs, len(pairs) - len(whole)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('squint')
    ap.add_argument('model')
    ap.add_argument('pairs')
    ap.add_argument('got')
    ap.add_argument('--instruction', default=INSTRUCTION)
    ap.add_argument('--tol', type=float, default=1e-4)
    ap.add_argument('--min-pairs', type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(2)
    cfg, w = load(a.model)
    vocab = json.load(open(os.path.join(a.model, 'tokenizer.json')))['model']['vocab']
    yes, no = vocab['yes'], vocab['no']
    head = lm_head(cfg, w)
    diff = (head[yes] - head[no]).double()
    max_len = min(8192, cfg['max_position_embeddings'])
    with open(a.pairs) as f:
        pairs = [(o['query'], o['document']) for o in map(json.loads, filter(str.strip, f))]
    with open(a.got) as f:
        got = [json.loads(line) for line in f if line.strip()]
    if len(got) != len(pairs) or len(pairs) < a.min_pairs:
        print(f'FAIL: {len(got)} scores for {len(pairs)} pairs (at least {a.min_pairs} needed)')
        return 1
    g_logit = torch.tensor([o['logit'] for o in got], dtype=torch.float64)
    g_score = torch.tensor([o['score'] for o in got], dtype=torch.float64)
    ok = True
    for wrong in (None, 'no think block', 'no instruction'):
        n = len(pairs) if wrong is None else 20
        seqs, cut = prompts(a.squint, a.model, pairs[:n], max_len,
                            None if wrong == 'no instruction' else a.instruction,
                            SUFFIX.replace('<think>\n\n</think>\n\n', '')
                            if wrong == 'no think block' else SUFFIX)
        ref = torch.stack([forward(cfg, w, ids, hidden=True)[-1] @ diff for ids in seqs])
        d = (g_logit[:n] - ref).abs()
        ds = (g_score[:n] - torch.sigmoid(ref)).abs().max().item()
        agree = d.max().item() <= a.tol and ds <= a.tol
        good = agree if wrong is None else not agree
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {'oracle' if wrong is None else 'wrong oracle (' + wrong + ')'}: "
              f"{n} pairs ({cut} cut to {max_len} tokens), max |logit - oracle| {d.max().item():.3g} "
              f"(pair {int(d.argmax())}), max |score - oracle| {ds:.3g}; oracle logits "
              f"{ref.min().item():.3f} .. {ref.max().item():.3f}, std {ref.std().item():.3f}")
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
