#!/usr/bin/env python3
"""The PyTorch oracle of a Qwen3-Embedding-style causal embedding model.

torch_qwen3.py's float64 forward (written from the Qwen3 architecture, its own
safetensors reader) gives the final hidden states (after model.norm); the
embedding is the last token's row, L2-normalized (sentence-transformers'
Pooling with pooling_mode_lasttoken, then Normalize). Compared with the
embeddings squint wrote (.npy) for the ids it used (its --tokens-output
JSONL), which must end with the <|endoftext|> the tokenizer's post-processor
appends (eos_token_id of config.json).

  torch_qwen3_embed.py MODEL_DIR --run T.jsonl E.npy [--run ...]
                       [--tol 1e-4] [--min-inputs N]
Each run is checked against the oracle and, on its first 20 texts, against
two wrong oracles (mean pooling; the appended token left out), which must
fail. Prints the worst
|difference| and the mean pairwise cosine of the oracle's embeddings (inputs
whose outputs differ); exit 0 when the oracle agrees and both wrong ones do
not, else 1.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_qwen3 import forward, load  # noqa: E402


def embeddings(cfg, w, seqs, wrong=None):
    out = []
    for ids in seqs:
        if wrong == "no-eos":
            ids = ids[:-1] or ids
        h = forward(cfg, w, ids, hidden=True)
        v = h.mean(0) if wrong == "mean" else h[-1]
        out.append((v / v.norm().clamp_min(1e-12)).numpy())
    return np.array(out)


def check(cfg, w, tokens, emb_path, tol, min_inputs):
    eos = cfg["eos_token_id"]
    with open(tokens) as f:
        seqs = [json.loads(line)["ids"] for line in f if line.strip()]
    got = np.load(emb_path).astype(np.float64)
    if got.shape[0] != len(seqs) or len(seqs) < min_inputs:
        print(f"FAIL: {emb_path}: {got.shape[0]} embeddings, {len(seqs)} token lists "
              f"(at least {min_inputs} needed)")
        return False
    bad = [i for i, ids in enumerate(seqs) if ids[-1] != eos]
    if bad:
        print(f"FAIL: {tokens}: text {bad[0]} does not end with eos_token_id {eos}")
        return False
    ok = True
    for wrong in (None, "mean", "no-eos"):
        if wrong:  # a wrong oracle has to fail somewhere: its first 20 texts show it
            seqs, got = seqs[:20], got[:20]
        ref = embeddings(cfg, w, seqs, wrong)
        d = np.abs(got - ref).max(1)
        cos = ref @ ref.T
        n = len(seqs)
        pair = (cos.sum() - np.trace(cos)) / max(n * (n - 1), 1)
        agree = d.max() <= tol
        good = agree if wrong is None else not agree
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {os.path.basename(emb_path)}: "
              f"{'oracle' if wrong is None else 'wrong oracle (' + wrong + ')'}: {n} texts, "
              f"max |squint - oracle| {d.max():.3g} (text {int(d.argmax())}), mean pairwise "
              f"cosine {pair:.4f}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--run", nargs=2, action="append", required=True,
                    metavar=("TOKENS_JSONL", "EMBEDDINGS_NPY"))
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--min-inputs", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(2)
    cfg, w = load(a.model)
    ok = True
    for tokens, emb in a.run:
        ok &= check(cfg, w, tokens, emb, a.tol, a.min_inputs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
