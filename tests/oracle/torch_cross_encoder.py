#!/usr/bin/python3
"""Independent PyTorch fp32 oracle for squint's cross-encoders
(BertForSequenceClassification with one label, scored as
sentence-transformers' CrossEncoder does).

For every (query, document) pair of a JSONL file ({"query": ..., "document":
...}) it builds the pair input itself: the content tokens of each text (from
`squint tokenize`, whose WordPiece is checked against Hugging Face tokenizers
elsewhere), the BERT pair template [CLS] q [SEP] d [SEP] with token types 0 /
1, and the truncation formats/SQM.md 6.11 specifies (the document is cut
first). The encoder is torch_encoder.TorchBert (stock torch.nn modules) with
token types; then the pooler tanh(W h_CLS + b), the classifier, and the
activation named in config.json. It runs `squint rerank` on the same pairs
(one call per query) and compares logits and scores.

Exit 0 when max |squint - torch| <= --tol on both, 1 above, 77 without torch.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("skipped: %s has no torch" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_encoder as te  # noqa: E402


def content_tokens(squint, model, texts):
    """Token ids of each text without [CLS]/[SEP] (nothing truncated)."""
    inp = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    out = subprocess.run([squint, "tokenize", model, "--input", "-", "--field", "text",
                          "--ids-only", "--max-seq", "1048576"],
                         input=inp.encode(), stdout=subprocess.PIPE, check=True).stdout
    rows = [json.loads(l)["ids"] for l in out.decode().splitlines()]
    if len(rows) != len(texts):
        raise SystemExit("squint tokenize gave %d rows for %d texts" % (len(rows), len(texts)))
    return [r[1:-1] for r in rows]


def truncate(na, nb, budget):
    """SQM.md 6.11: Hugging Face's longest_first (the shorter text keeps all
    of itself when it is at most half; else halves, the odd token to the
    document unless the query is longer)."""
    if na + nb <= budget:
        return na, nb
    if 2 * min(na, nb) <= budget:
        return (na, budget - na) if na <= nb else (budget - nb, nb)
    lo, hi = budget // 2, budget - budget // 2
    return (lo, hi) if na <= nb else (hi, lo)


def activation(cfg):
    name = cfg.get("sbert_ce_default_activation_function")
    if name is None:
        name = (cfg.get("sentence_transformers") or {}).get("activation_fn")
    if name is None:
        return "Sigmoid"  # CrossEncoder's default for one label
    return name.rsplit(".", 1)[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("pairs")
    ap.add_argument("--squint", required=True)
    ap.add_argument("--max-seq", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with open(os.path.join(a.model, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("architectures") != ["BertForSequenceClassification"]:
        raise SystemExit("%s: not a BertForSequenceClassification" % a.model)
    raw = te.load_safetensors(os.path.join(a.model, "model.safetensors"))
    w = {k[5:]: v for k, v in raw.items() if k.startswith("bert.")}
    bert = te.TorchBert(cfg, w)
    pool_w, pool_b = (torch.from_numpy(w["pooler.dense." + n]) for n in ("weight", "bias"))
    cls_w, cls_b = (torch.from_numpy(raw["classifier." + n]) for n in ("weight", "bias"))
    if cls_w.shape[0] != 1:
        raise SystemExit("one-label cross-encoders only")
    act = activation(cfg)
    fn = {"Sigmoid": torch.sigmoid, "Identity": lambda x: x, "Tanh": torch.tanh}[act]

    pairs = [json.loads(l) for l in open(a.pairs, encoding="utf-8") if l.strip()]
    max_seq = a.max_seq or cfg["max_position_embeddings"]
    texts = sorted({p["query"] for p in pairs} | {p["document"] for p in pairs})
    toks = dict(zip(texts, content_tokens(a.squint, a.model, texts)))
    with open(os.path.join(a.model, "vocab.txt"), encoding="utf-8") as f:
        vocab = {t.rstrip("\n"): i for i, t in enumerate(f)}
    CLS, SEP, PAD = vocab["[CLS]"], vocab["[SEP]"], cfg.get("pad_token_id", 0)
    seqs, types = [], []
    for p in pairs:
        q, d = toks[p["query"]], toks[p["document"]]
        kq, kd = truncate(len(q), len(d), max_seq - 3)
        seqs.append([CLS] + q[:kq] + [SEP] + d[:kd] + [SEP])
        types.append([0] * (kq + 2) + [1] * (kd + 1))
    # torch in one padded batch (a composition squint never uses)
    S = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), S), PAD, dtype=torch.long)
    tt = torch.zeros((len(seqs), S), dtype=torch.long)
    mask = torch.zeros((len(seqs), S), dtype=torch.long)
    for i, (s, t) in enumerate(zip(seqs, types)):
        ids[i, :len(s)] = torch.tensor(s)
        tt[i, :len(t)] = torch.tensor(t)
        mask[i, :len(s)] = 1
    with torch.no_grad():
        hid = bert(ids, mask, tt)
        pooled = torch.tanh(hid[:, 0] @ pool_w.T + pool_b)
        ref_logit = (pooled @ cls_w.T + cls_b)[:, 0].double()
        ref_score = fn(ref_logit)

    # squint rerank, one call per query; results back in pair order
    got_logit = np.full(len(pairs), np.nan)
    got_score = np.full(len(pairs), np.nan)
    by_query = {}
    for i, p in enumerate(pairs):
        by_query.setdefault(p["query"], []).append(i)
    for q, idx in by_query.items():
        docs = "".join(json.dumps({"text": pairs[i]["document"]}) + "\n" for i in idx)
        cmd = [a.squint, "rerank", a.model, "--query", q, "--docs", "-", "--field", "text",
               "--max-seq", str(max_seq), "--threads", str(a.threads)]
        out = subprocess.run(cmd, input=docs.encode(), stdout=subprocess.PIPE, check=True).stdout
        for line in out.decode().splitlines():
            r = json.loads(line)
            got_logit[idx[r["index"]]] = r["logit"]
            got_score[idx[r["index"]]] = r["score"]
    dl = np.abs(got_logit - ref_logit.numpy()).max()
    ds = np.abs(got_score - ref_score.numpy()).max()
    spread = float(ref_logit.std())
    print("cross-encoder oracle: %d pairs, %d queries, activation %s, max-seq %d" %
          (len(pairs), len(by_query), act, max_seq))
    print("  logit spread over pairs (std) %.4f, range [%.4f, %.4f]" %
          (spread, float(ref_logit.min()), float(ref_logit.max())))
    print("  max |squint - torch|: logit %.3g, score %.3g (tol %g)" % (dl, ds, a.tol))
    if not (dl <= a.tol and ds <= a.tol):
        print("FAIL")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
