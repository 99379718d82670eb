#!/usr/bin/env python3
"""An independent PyTorch oracle of the Llama forward pass (squint's decoder).

Reads a llama2.c legacy checkpoint itself (7 int32 header, float32 tensors in
llama2.c order) and runs the forward pass from torch primitives in float64:
RMSNorm, rotary embedding on adjacent pairs inside each head (theta 10000),
causal grouped-query attention, SwiGLU, tied or separate classifier. No squint
code. Compares against logits squint wrote (raw float32 [n][vocab]) for the ids
it used, and can print the mean NLL of the ids (a perplexity check).

  torch_llama.py MODEL --ids IDS_FILE [--logits F32_FILE --tol 1e-4] [--nll]
"""
import argparse
import math
import struct
import sys

import torch


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", raw[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    hd = dim // heads
    kv = hd * kv_heads
    data = torch.frombuffer(bytearray(raw[28:]), dtype=torch.float32).double()
    at = 0

    def take(*shape):
        nonlocal at
        n = math.prod(shape)
        t = data[at:at + n].reshape(shape)
        at += n
        return t

    w = {"emb": take(vocab, dim), "rms_att": take(layers, dim), "wq": take(layers, dim, dim),
         "wk": take(layers, kv, dim), "wv": take(layers, kv, dim), "wo": take(layers, dim, dim),
         "rms_ffn": take(layers, dim), "w1": take(layers, hidden, dim),
         "w2": take(layers, dim, hidden), "w3": take(layers, hidden, dim),
         "rms_final": take(dim)}
    take(seq_len, hd // 2)
    take(seq_len, hd // 2)
    w["cls"] = w["emb"] if shared else take(vocab, dim)
    if at != data.numel():
        sys.exit(f"{path}: {data.numel() - at} floats left over")
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
               vocab=vocab, seq_len=seq_len, hd=hd)
    return cfg, w


def rmsnorm(x, g, eps=1e-5):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def rope(x, pos, hd, theta=10000.0):
    # x [T, H, hd]; pairs (2j, 2j+1) rotated by pos * theta^(-2j/hd)
    j = torch.arange(hd // 2, dtype=torch.float64)
    ang = pos[:, None].double() * theta ** (-2.0 * j / hd)  # [T, hd/2]
    c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def forward(cfg, w, ids):
    T, H, KVH, hd = len(ids), cfg["heads"], cfg["kv_heads"], cfg["hd"]
    pos = torch.arange(T)
    x = w["emb"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["layers"]):
        h = rmsnorm(x, w["rms_att"][l])
        q = rope((h @ w["wq"][l].T).view(T, H, hd), pos, hd)
        k = rope((h @ w["wk"][l].T).view(T, KVH, hd), pos, hd)
        v = (h @ w["wv"][l].T).view(T, KVH, hd)
        rep = H // KVH
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, -1)
        x = x + o @ w["wo"][l].T
        h = rmsnorm(x, w["rms_ffn"][l])
        g = h @ w["w1"][l].T
        x = x + (torch.nn.functional.silu(g) * (h @ w["w3"][l].T)) @ w["w2"][l].T
    return rmsnorm(x, w["rms_final"]) @ w["cls"].T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--logits")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--nll", action="store_true")
    a = ap.parse_args()
    cfg, w = load(a.model)
    rc = 0
    with open(a.ids) as f:
        seqs = [[int(t) for t in line.split()] for line in f if line.strip()]
    if a.logits:
        got = torch.frombuffer(bytearray(open(a.logits, "rb").read()), dtype=torch.float32).double()
        at = 0
    tot_nll, tot_n = 0.0, 0
    for ids in seqs:
        for s in range(0, max(len(ids) - 1, 1), cfg["seq_len"]):
            ref = forward(cfg, w, ids[s:s + cfg["seq_len"]])
            if a.nll:
                tgt = torch.tensor(ids[s + 1:s + cfg["seq_len"] + 1])
                lp = torch.log_softmax(ref[:len(tgt)], -1)
                tot_nll -= lp[torch.arange(len(tgt)), tgt].sum().item()
                tot_n += len(tgt)
        if a.logits:
            n = len(ids) * cfg["vocab"]
            mine = got[at:at + n].view(len(ids), cfg["vocab"])
            at += n
            ref = forward(cfg, w, ids)
            err = (mine - ref).abs().max().item()
            print(f"{len(ids)} tokens: max |logit difference| {err:.3g}")
            if not err <= a.tol:
                rc = 1
    if a.nll:
        print(f"tokens {tot_n} mean_nll {tot_nll / tot_n:.6f} perplexity {math.exp(tot_nll / tot_n):.4f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
