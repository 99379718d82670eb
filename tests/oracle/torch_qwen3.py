#!/usr/bin/env python3
"""An independent PyTorch oracle of a Hugging Face Qwen3ForCausalLM folder.

Written from the Qwen3 architecture (transformers' modeling_qwen3: no Qwen3 in
the transformers this repository's reference venv pins), from torch
primitives in float64, reading config.json and model.safetensors itself
(torch_llama_hf.read_safetensors: F32, F16, BF16; no squint code):
  h = RMSNorm(x) (input_layernorm); q, k, v = h Wq^T, h Wk^T, h Wv^T as
  [T, heads, head_dim] (head_dim from config.json, so heads * head_dim may
  differ from hidden_size); q = RMSNorm_head(q) * q_norm,
  k = RMSNorm_head(k) * k_norm (over head_dim, eps rms_norm_eps, BEFORE
  RoPE); RoPE rotate_half with inv_freq = theta^(-2j/head_dim); causal
  grouped-query attention scaled by head_dim^-0.5; x += o Wo^T;
  x += down(silu(gate(h)) * up(h)) with h = RMSNorm(x)
  (post_attention_layernorm); logits = RMSNorm(x) (model.norm) times the
  tied embedding or lm_head.
Compares against logits squint wrote (raw float32 [n][vocab]) for the ids it
used (one line of ids per sequence, logits concatenated).

  torch_qwen3.py MODEL_DIR --ids IDS --logits F32 [--tol 1e-4]
                 [--no-qk-norm]   (q/k norm left out: a wrong oracle, must fail)
                 [--and-wrong]    (one load: pass only when the oracle passes and
                                   the wrong one, on the same ids, fails)
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_llama_hf import read_safetensors, rms, rope  # noqa: E402


def load(model_dir):
    """config.json and model.safetensors of a folder: (cfg, w)."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    return cfg, read_safetensors(os.path.join(model_dir, "model.safetensors"))


def lm_head(cfg, w):
    """The LM head [vocab, D]: the tied embedding, or lm_head.weight."""
    pfx = "model." if "model.embed_tokens.weight" in w else ""
    return w[pfx + "embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) \
        else w["lm_head.weight"]


def forward(cfg, w, ids, qk_norm=True, hidden=False):
    """Logits [T, vocab]; hidden: the final hidden states [T, D] instead."""
    D = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KVH = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or 128
    eps = cfg.get("rms_norm_eps", 1e-6)
    theta = cfg.get("rope_theta", 1000000.0)
    T = len(ids)
    pos = torch.arange(T)
    # a causal LM's names, or a bare Qwen3Model's (Qwen3-Embedding: no prefix)
    pfx = "model." if "model.embed_tokens.weight" in w else ""
    x = w[pfx + "embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"{pfx}layers.{l}."
        h = rms(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, H, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, KVH, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, KVH, hd)
        if qk_norm:
            q = rms(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k = rope(q, pos, theta, False), rope(k, pos, theta, False)
        k = k.repeat_interleave(H // KVH, dim=1)
        v = v.repeat_interleave(H // KVH, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / hd ** 0.5 + mask
        o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, H * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms(x, w[pfx + "norm.weight"], eps)
    if hidden:
        return x
    return x @ lm_head(cfg, w).T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--logits", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--no-qk-norm", action="store_true")
    ap.add_argument("--and-wrong", action="store_true")
    a = ap.parse_args()
    cfg, w = load(a.model)
    if cfg.get("model_type") != "qwen3":
        raise SystemExit(f"{a.model}: model_type is not qwen3")
    V = cfg["vocab_size"]
    with open(a.ids) as f:
        seqs = [[int(t) for t in line.split()] for line in f if line.strip()]
    got = np.fromfile(a.logits, dtype="<f4")
    at, worst, worst_wrong = 0, 0.0, 0.0
    for ids in seqs:
        n = len(ids) * V
        mine = torch.from_numpy(got[at:at + n].astype(np.float64)).view(len(ids), V)
        at += n
        err = (mine - forward(cfg, w, ids, not a.no_qk_norm)).abs().max().item()
        worst = max(worst, err)
        print(f"{len(ids)} tokens: max |logit difference| {err:.3g}")
        if a.and_wrong:
            e2 = (mine - forward(cfg, w, ids, False)).abs().max().item()
            worst_wrong = max(worst_wrong, e2)
            print(f"{len(ids)} tokens: wrong oracle (no q/k norm): max |logit difference| {e2:.3g}")
    if at != got.size:
        raise SystemExit(f"{a.logits}: {got.size - at} values left over")
    print(f"worst {worst:.3g}" + (f", wrong oracle {worst_wrong:.3g}" if a.and_wrong else ""))
    if a.and_wrong and worst_wrong <= a.tol:
        return 1
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
