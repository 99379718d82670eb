#!/usr/bin/env python3
"""What int4-g128 weight rounding could reach on stories260K (docs/decoders.md
"Quantized decoders"): a PyTorch study, not squint code and not a test.

Every linear of the model is fake-quantized (weights only; fp32 activations
and lm head) with GPTQ on the Gram matrices of the fp32 model's inputs over
the calibration ids, in the variants below, and the held-out perplexity is
compared with fp32. It answers "which change to squint's int4 quantizer
would close the 5% bar" before any of it is built in C.

  squint tokenize stories260K.bin --input calib.txt --ids-only --max-seq 100000 > cal.ids
  squint tokenize stories260K.bin --input held.txt --ids-only --max-seq 100000 > held.ids
  /usr/bin/python3 tests/bench/int4_rounding_study.py stories260K.bin cal.ids held.ids

Variants: symmetric groups (squint's int4-g128: levels -7..7, scale clip
searched on importance-weighted error) or asymmetric (16 levels over a
searched [min, max], integer zero point); columns in order or by decreasing
Gram diagonal ("act order", group parameters fixed from the unrounded
weights first); optionally each group's (scale, offset) refitted by least
squares under the Gram matrix after rounding; optionally bias correction
(each output gets the float bias (W - Wq) E[x], E[x] the mean calibration
input of the linear).
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import torch_llama as TL  # noqa: E402  (the independent oracle's loader and ops)

GROUP = 128
DAMP = 0.01
# (matrix, input): 0 the attention RMSNorm output, 1 the attention output,
# 2 the FFN RMSNorm output, 3 the SwiGLU product
LINEARS = [("wq", 0), ("wk", 0), ("wv", 0), ("wo", 1), ("w1", 2), ("w3", 2), ("w2", 3)]


def forward(cfg, w, ids, grams=None):
    T, H, KVH, hd = len(ids), cfg["heads"], cfg["kv_heads"], cfg["hd"]
    pos = torch.arange(T)
    x = w["emb"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)

    def seen(key, v):
        if grams is not None:
            grams[key] = grams.get(key, 0) + v.T @ v
            grams[("sum",) + key] = grams.get(("sum",) + key, 0) + v.sum(0)
            grams[("n",) + key] = grams.get(("n",) + key, 0) + v.shape[0]

    def lin(h, name, l):
        y = h @ w[name][l].T
        b = w.get(name + "_bias")
        return y if b is None else y + b[l]

    for l in range(cfg["layers"]):
        h = TL.rmsnorm(x, w["rms_att"][l])
        seen((l, 0), h)
        q = TL.rope(lin(h, "wq", l).view(T, H, hd), pos, hd)
        k = TL.rope(lin(h, "wk", l).view(T, KVH, hd), pos, hd).repeat_interleave(H // KVH, 1)
        v = lin(h, "wv", l).view(T, KVH, hd).repeat_interleave(H // KVH, 1)
        att = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, -1)
        seen((l, 1), o)
        x = x + lin(o, "wo", l)
        h = TL.rmsnorm(x, w["rms_ffn"][l])
        seen((l, 2), h)
        m = torch.nn.functional.silu(lin(h, "w1", l)) * lin(h, "w3", l)
        seen((l, 3), m)
        x = x + lin(m, "w2", l)
    return TL.rmsnorm(x, w["rms_final"]) @ w["cls"].T


def perplexity(cfg, w, docs):
    nll, n, L = 0.0, 0, cfg["seq_len"]
    for ids in docs:
        for s in range(0, max(len(ids) - 1, 1), L):
            tgt = torch.tensor(ids[s + 1:s + L + 1])
            lp = torch.log_softmax(forward(cfg, w, ids[s:s + L])[:len(tgt)], -1)
            nll -= lp[torch.arange(len(tgt)), tgt].sum().item()
            n += len(tgt)
    return math.exp(nll / n)


def group_params(wg, imp, asym):
    """Per row of wg [N, g]: the (scale, zero) of least importance-weighted
    squared error over clips 1.00 .. 0.60 of the range."""
    best = None
    for i in range(41):
        f = 1 - 0.01 * i
        if asym:
            hi, lo = wg.max(1).values * f, wg.min(1).values * f
            d = ((hi - lo) / 15).clamp_min(1e-12)
            z = torch.round(-lo / d)
        else:
            d = (wg.abs().max(1).values * f / 7).clamp_min(1e-12)
            z = torch.zeros_like(d)
        e = (((wg - rounded(wg, d[:, None], z[:, None], asym)) ** 2) * imp).sum(1)
        if best is None:
            best, bd, bz = e, d, z
        else:
            m = e < best
            best, bd, bz = torch.where(m, e, best), torch.where(m, d, bd), torch.where(m, z, bz)
    return bd, bz


def rounded(v, d, z, asym):
    if asym:
        return ((torch.round(v / d) + z).clamp(0, 15) - z) * d
    return torch.round(v / d).clamp(-7, 7) * d


def gptq(w, H, asym, act_order, refit):
    N, K = w.shape
    H = H.clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    H += DAMP * torch.mean(torch.diag(H)) * torch.eye(K, dtype=H.dtype)
    imp = torch.diag(H)
    params = [group_params(w[:, g:g + GROUP], imp[g:g + GROUP], asym) for g in range(0, K, GROUP)]
    perm = torch.argsort(imp, descending=True) if act_order else torch.arange(K)
    wp, Hp = w[:, perm].clone(), H[perm][:, perm]
    U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(Hp)), upper=True)
    Q = torch.zeros_like(wp)
    for i in range(K):
        d, z = params[perm[i].item() // GROUP]
        Q[:, i] = rounded(wp[:, i], d, z, asym)
        e = (wp[:, i] - Q[:, i]) / U[i, i]
        wp[:, i + 1:] -= e[:, None] * U[i, i + 1:][None, :]
    out = torch.empty_like(Q)
    out[:, perm] = Q
    if refit:  # least squares (w - A p)^T H (w - A p) over each group's scale (and offset)
        for n in range(N):
            cols = []
            for gi, (d, z) in enumerate(params):
                g0, g1 = gi * GROUP, min(K, gi * GROUP + GROUP)
                u = torch.zeros(K, dtype=w.dtype)
                u[g0:g1] = out[n, g0:g1] / d[n] + (z[n] if asym else 0)
                cols.append(u)
                if asym:
                    one = torch.zeros(K, dtype=w.dtype)
                    one[g0:g1] = 1
                    cols.append(one)
            A = torch.stack(cols, 1)
            p = torch.linalg.solve(A.T @ H @ A, A.T @ H @ w[n])
            out[n] = A @ p
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    torch.set_num_threads(2)
    cfg, W = TL.load(sys.argv[1])

    def docs(path):
        return [json.loads(line)["ids"] for line in open(path) if line.strip()]

    cal, held = docs(sys.argv[2]), docs(sys.argv[3])
    grams = {}
    with torch.no_grad():
        for ids in cal:
            forward(cfg, W, ids[:cfg["seq_len"]], grams)
        base = perplexity(cfg, W, held)
        print(f"| variant | ppl | vs fp32 |\n|---|---|---|\n| fp32 | {base:.4f} | +0.00% |")
        for asym, act_order, refit, bias in [(False, False, False, False), (False, False, False, True),
                                             (False, True, False, True), (True, True, True, False),
                                             (True, True, True, True)]:
            w2 = {k: v.clone() for k, v in W.items()}
            for name, kind in LINEARS:
                if bias:
                    w2[name + "_bias"] = torch.zeros(cfg["layers"], W[name].shape[1], dtype=W[name].dtype)
                for l in range(cfg["layers"]):
                    w2[name][l] = gptq(W[name][l], grams[(l, kind)], asym, act_order, refit)
                    if bias:  # the rounding error's mean effect: (W - Wq) E[x]
                        mean = grams[("sum", l, kind)] / grams[("n", l, kind)]
                        w2[name + "_bias"][l] = (W[name][l] - w2[name][l]) @ mean
            p = perplexity(cfg, w2, held)
            label = ("asymmetric" if asym else "symmetric") + (", act order" if act_order else "") \
                + (", refit" if refit else "") + (", bias correction" if bias else "")
            print(f"| GPTQ {label} | {p:.4f} | {100 * (p / base - 1):+.2f}% |", flush=True)


if __name__ == "__main__":
    main()
