#!/usr/bin/env python3
"""An independent PyTorch oracle of a Hugging Face LlamaForCausalLM folder.

Reads config.json and model.safetensors itself (the JSON header and numpy
frombuffer: F32, F16, BF16; no safetensors package, no transformers, no squint
code) and runs the forward pass in HF's layout from torch primitives in
float64: RMSNorm, rotary embedding as transformers applies it (rotate_half:
the first and the second half of each head, inv_freq = theta^(-2j/hd)),
causal grouped-query attention, SwiGLU (gate, up, down), tied or untied
lm_head. Compares against logits squint wrote (raw float32 [n][vocab]) for the
ids it used (one line of ids per sequence, logits concatenated).

  torch_llama_hf.py MODEL_DIR --ids IDS --logits F32 [--tol 1e-4]
                    [--wrong-rope]   (adjacent-pair RoPE on HF weights: must fail)
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = raw[base + b:base + e]
        dt = info["dtype"]
        if dt == "F32":
            a = np.frombuffer(buf, dtype="<f4").astype(np.float64)
        elif dt == "F16":
            a = np.frombuffer(buf, dtype="<f2").astype(np.float64)
        elif dt == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            a = a.astype(np.float64)
        else:
            raise SystemExit(f"{path}: {name}: dtype {dt} not handled by the oracle")
        out[name] = torch.from_numpy(a.reshape(info["shape"]).copy())
    return out


def load(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    w = read_safetensors(os.path.join(d, "model.safetensors"))
    return cfg, w


def rms(x, g, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, pos, theta, wrong):
    """x [T, heads, hd] at positions pos [T]."""
    hd = x.shape[-1]
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)  # [hd/2]
    ang = pos[:, None].double() * inv[None, :]                             # [T, hd/2]
    if wrong:  # llama2.c's adjacent pairs, on weights laid out for rotate_half
        c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    emb = torch.cat((ang, ang), dim=-1)
    c, s = torch.cos(emb)[:, None, :], torch.sin(emb)[:, None, :]
    return x * c + rotate_half(x) * s


def forward(cfg, w, ids, wrong=False):
    D = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KVH = cfg.get("num_key_value_heads") or H
    hd = D // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    T = len(ids)
    pos = torch.arange(T)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, H, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, KVH, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, KVH, hd)
        q, k = rope(q, pos, theta, wrong), rope(k, pos, theta, wrong)
        k = k.repeat_interleave(H // KVH, dim=1)
        v = v.repeat_interleave(H // KVH, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / hd ** 0.5 + mask
        o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, D)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) \
        else w["lm_head.weight"]
    return x @ head.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--logits", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--wrong-rope", action="store_true")
    a = ap.parse_args()
    cfg, w = load(a.model)
    V = cfg["vocab_size"]
    with open(a.ids) as f:
        seqs = [[int(t) for t in line.split()] for line in f if line.strip()]
    got = torch.from_numpy(np.fromfile(a.logits, dtype="<f4").astype(np.float64))
    at, worst = 0, 0.0
    for ids in seqs:
        n = len(ids) * V
        mine = got[at:at + n].view(len(ids), V)
        at += n
        err = (mine - forward(cfg, w, ids, a.wrong_rope)).abs().max().item()
        worst = max(worst, err)
        print(f"{len(ids)} tokens: max |logit difference| {err:.3g}")
    if at != got.numel():
        raise SystemExit(f"{a.logits}: {got.numel() - at} values left over")
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
