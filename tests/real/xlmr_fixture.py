#!/usr/bin/env python3
"""XLM-RoBERTa encoders and cross-encoders against Hugging Face transformers.

usage: xlmr_fixture.py SQUINT TOKENIZER_DIR SHARED_DATA WORKDIR

Run with the reference venv's python (scripts/ref_venv.sh: transformers over
Debian's PyTorch). No XLM-RoBERTa weights are reachable offline, so
transformers builds them (seed 0) at multilingual-e5-small's layer shape
(hidden 384, 12 heads, FFN 1536; 2 layers) with its 250,002-row vocabulary,
the real tokenizer (TOKENIZER_DIR: scripts/fetch_xlmr_tokenizer.py), and the
outlier mechanism trained XLM-R models show (two embedding LayerNorm channels
scaled by 20), saved as safetensors:

  1. XLMRobertaModel: squint's fp32 hidden states (`embed --hidden-output`:
     RoBERTa positions pad + 1 + index, one token type) against
     last_hidden_state on 200 STS-B test sentences plus long ones cut at the
     512-token limit, to 1e-4; the mean pairwise cosine of the texts' mean
     pooled states is printed (outputs must depend on the inputs); a
     deliberately wrong reference (BERT's positions 0, 1, ...) must disagree;
  2. XLMRobertaForSequenceClassification (one label): `rerank --pairs` logits
     (<s> a </s></s> b </s>, RoBERTa's classification head) against the
     model's on 200 STS-B pairs, to 1e-4.
Exit 1 when a check fails.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from transformers import (AutoTokenizer, XLMRobertaConfig, XLMRobertaForSequenceClassification,
                          XLMRobertaModel)


def stsb(data, n):
    sents, pairs = [], []
    with open(os.path.join(data, "stsb-glue", "original", "sts-test.tsv"), encoding="utf-8") as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) > 6 and p[5].strip() and p[6].strip():
                pairs.append((p[5], p[6]))
                for s in (p[5], p[6]):
                    if s not in sents:
                        sents.append(s)
            if len(sents) >= n and len(pairs) >= n:
                break
    return sents[:n], pairs[:n]


def config(num_labels=None):
    kw = dict(vocab_size=250002, hidden_size=384, num_hidden_layers=2, num_attention_heads=12,
              intermediate_size=1536, max_position_embeddings=514, type_vocab_size=1,
              pad_token_id=1, bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5)
    if num_labels:
        kw.update(num_labels=num_labels, architectures=["XLMRobertaForSequenceClassification"])
    else:
        kw.update(architectures=["XLMRobertaModel"])
    return XLMRobertaConfig(**kw)


def save(model, tok_dir, out):
    model.save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok_dir, f), os.path.join(out, f))


def main():
    sq, tok_dir, data, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    ok = True
    torch.manual_seed(0)
    enc = XLMRobertaModel(config(), add_pooling_layer=False).eval()
    with torch.no_grad():  # outlier channels as trained XLM-R models have them
        enc.embeddings.LayerNorm.weight[[7, 300]] *= 20.0
    d_enc = os.path.join(work, "xlmr")
    save(enc, tok_dir, d_enc)
    tok = AutoTokenizer.from_pretrained(d_enc)
    sents, pairs = stsb(data, 200)
    sents += [" ".join(["quantization"] * 400), "données " * 700]  # past 512 tokens
    inp = os.path.join(work, "texts.txt")
    with open(inp, "w", encoding="utf-8") as f:
        f.write("\n".join(sents) + "\n")
    subprocess.run([sq, "embed", d_enc, "--input", inp, "--output", os.path.join(work, "e.npy"),
                    "--hidden-output", os.path.join(work, "h.npy"), "--tokens-output",
                    os.path.join(work, "t.jsonl"), "--threads", "2", "--max-seq", "512"],
                   check=True, capture_output=True)
    hid = np.load(os.path.join(work, "h.npy")).astype(np.float64)
    ids = [json.loads(l)["ids"] for l in open(os.path.join(work, "t.jsonl"))]
    ref_ids = tok(sents, truncation=True, max_length=512)["input_ids"]
    tok_bad = sum(a != b for a, b in zip(ids, ref_ids))
    print("xlmr tokens: %d texts, %d differ from transformers' (the Rust tokenizer)"
          % (len(sents), tok_bad))
    ok &= tok_bad == 0
    rows, rows_bad, means = [], [], []
    with torch.no_grad():
        for s in ids:
            t = torch.tensor([s])
            h = enc(input_ids=t).last_hidden_state[0].double().numpy()
            hb = enc(input_ids=t, position_ids=torch.arange(len(s))[None]).last_hidden_state[0]
            rows.append(h)
            rows_bad.append(hb.double().numpy())
            means.append(h.mean(0))
    ref = np.concatenate(rows)
    d = np.abs(hid - ref).max()
    dw = np.abs(hid - np.concatenate(rows_bad)).max()
    m = np.array(means)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    cos = m @ m.T
    off = cos[~np.eye(len(m), dtype=bool)]
    print("xlmr encoder: %d texts (%d at 512 tokens), max |squint - transformers| %.3g; "
          "mean pairwise cosine %.4f; BERT positions instead: %.3g (must be > 1e-2)"
          % (len(ids), sum(len(s) == 512 for s in ids), d, off.mean(), dw))
    ok &= d <= 1e-4 and dw > 1e-2 and sum(len(s) == 512 for s in ids) >= 2

    torch.manual_seed(1)
    ce = XLMRobertaForSequenceClassification(config(num_labels=1)).eval()
    with torch.no_grad():
        ce.classifier.out_proj.weight.mul_(200.0)
    d_ce = os.path.join(work, "xlmr-ce")
    save(ce, tok_dir, d_ce)
    encp = tok([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        ref_l = ce(**encp).logits[:, 0].double().numpy()
    jl = os.path.join(work, "pairs.jsonl")
    with open(jl, "w", encoding="utf-8") as f:
        for a, b in pairs:
            f.write(json.dumps({"query": a, "document": b}) + "\n")
    out = subprocess.run([sq, "rerank", d_ce, "--pairs", jl, "--threads", "2"], check=True,
                         capture_output=True, text=True).stdout
    got = np.array([json.loads(l)["logit"] for l in out.splitlines() if l.strip()])
    dl = np.abs(got - ref_l).max() if got.shape == ref_l.shape else float("inf")
    print("xlmr cross-encoder: %d pairs, logits std %.3g, max |squint - transformers| %.3g"
          % (len(pairs), ref_l.std(), dl))
    ok &= dl <= 1e-4 and ref_l.std() > 0.05
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
