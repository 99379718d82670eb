#!/usr/bin/env python3
"""An MPNet cross-encoder against Hugging Face transformers' MPNetForSequenceClassification.

usage: mpnet_cross_encoder.py SQUINT MPNET_DIR SHARED_DATA WORKDIR

Run with the reference venv's python (scripts/ref_venv.sh: transformers,
tokenizers over Debian's PyTorch). No MPNet cross-encoder is on PyPI, so this
one is made here: transformers builds a 2-layer MPNetForSequenceClassification
(hidden 256, seed 0, one label; its classifier head is dense + tanh +
out_proj on <s>) with the real all-mpnet-base-v2 tokenizer and vocabulary,
saves it as safetensors, and scores 200 STS-B test pairs. squint reads the
same folder (`rerank --pairs`: RoBERTa pairs <s> a </s></s> b </s>, all of
token type 0; MPNet's positions and relative bias) and must give the same
logits to 1e-4. A deliberately wrong pair (BERT's <s> a </s> b </s>) must not.
Exit 1 when a check fails.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from transformers import AutoTokenizer, MPNetConfig, MPNetForSequenceClassification


def stsb_pairs(data, n):
    out = []
    with open(os.path.join(data, "stsb-glue", "original", "sts-test.tsv"), encoding="utf-8") as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) > 6 and p[5].strip() and p[6].strip():
                out.append((p[5], p[6]))
            if len(out) == n:
                break
    return out


def main():
    sq, mpnet, data, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    ce = os.path.join(work, "mpnet-ce")
    torch.manual_seed(0)
    base = MPNetConfig.from_pretrained(mpnet)
    cfg = MPNetConfig(vocab_size=base.vocab_size, hidden_size=256, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=512,
                      max_position_embeddings=base.max_position_embeddings,
                      pad_token_id=base.pad_token_id, bos_token_id=base.bos_token_id,
                      eos_token_id=base.eos_token_id, layer_norm_eps=base.layer_norm_eps,
                      num_labels=1, architectures=["MPNetForSequenceClassification"])
    model = MPNetForSequenceClassification(cfg).eval()
    with torch.no_grad():  # spread the logits: a random head gives nearly equal ones
        model.classifier.out_proj.weight.mul_(200.0)
    model.save_pretrained(ce, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(os.path.join(mpnet, f), os.path.join(ce, f))
    tok = AutoTokenizer.from_pretrained(ce)
    pairs = stsb_pairs(data, 200)
    enc = tok([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = model(**enc).logits[:, 0].double().numpy()
    jl = os.path.join(work, "pairs.jsonl")
    with open(jl, "w", encoding="utf-8") as f:
        for a, b in pairs:
            f.write(json.dumps({"query": a, "document": b}) + "\n")
    out = subprocess.run([sq, "rerank", ce, "--pairs", jl, "--threads", "2"], check=True,
                         capture_output=True, text=True).stdout
    got = np.array([json.loads(l)["logit"] for l in out.splitlines() if l.strip()])
    ok = True
    if got.shape != ref.shape:
        print("FAIL: squint gave %d logits for %d pairs" % (got.size, ref.size))
        return 1
    d = np.abs(got - ref)
    spread = ref.std()
    print("mpnet cross-encoder: %d STS-B pairs, logits std %.3g; max |squint - transformers| %.3g "
          "(pair %d)" % (len(pairs), spread, d.max(), int(d.argmax())))
    ok &= d.max() <= 1e-4 and spread > 0.05
    # the check can fail: BERT's pair form on the same model gives other logits
    ids = enc["input_ids"].clone()
    bad = []
    for i in range(ids.shape[0]):
        row = [t for t in ids[i].tolist() if t != tok.pad_token_id]
        j = row.index(tok.sep_token_id)
        bad.append(row[:j + 1] + row[j + 2:])  # drop the second </s>
    L = max(map(len, bad))
    bid = torch.tensor([r + [tok.pad_token_id] * (L - len(r)) for r in bad])
    with torch.no_grad():
        wrong = model(input_ids=bid, attention_mask=(bid != tok.pad_token_id).long()).logits[:, 0]
    dw = np.abs(got - wrong.double().numpy()).max()
    print("wrong pair form (<s> a </s> b </s>): max |squint - it| %.3g (must be > 1e-3)" % dw)
    ok &= dw > 1e-3
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
