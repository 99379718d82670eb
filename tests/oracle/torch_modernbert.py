#!/usr/bin/python3
"""Independent PyTorch oracle for squint's ModernBERT encoder (ModernBERT-base,
gte-modernbert-base, modernbert-embed-base; model_type "modernbert").

Written from ModernBertModel's definition (transformers' modeling_modernbert.py,
read for its arithmetic, not copied) with PyTorch primitives only: no
transformers, no squint code. It reads the Hugging Face folder itself
(config.json, model.safetensors through torch_encoder's own reader,
modules.json / 1_Pooling) and checks:

  - embeddings: tok_embeddings, then the LayerNorm embeddings.norm (weight
    only: norm_bias false); no position table, no token types;
  - pre-LN layers: h += Wo(attn(attn_norm(h))), attn_norm the identity on
    layer 0; h += mlp.Wo(gelu(a) * g) with a, g = mlp.Wi(mlp_norm(h)).chunk(2)
    (GeGLU, exact erf GELU); no linear biases;
  - fused Wqkv rows [q | k | v], heads contiguous; rotary positions
    (rotate-half, inv_freq = 1 / theta^(arange(0, d, 2) / d), float32 angles)
    with theta = global_rope_theta on layers l % global_attn_every_n_layers
    == 0, local_rope_theta on the others;
  - scores / sqrt(d), softmax; on local layers key j is visible from query i
    only when |i - j| <= local_attention // 2 (an additive finfo.min mask);
  - final_norm after the last layer.

compare mode reads squint's TOK.jsonl / HID.npy / OUT.npy (from
`squint embed --tokens-output --hidden-output`), runs the same ids in padded
batches of similar length, reports max |diff| of the hidden states and the
pooled embeddings and the mean pairwise cosine of the embeddings (inputs must
give different outputs), and exits 1 above --tol.

--wrong MECH changes one mechanism (no-local-window: every layer global;
gelu-on-gate: GeGLU's halves swapped; no-final-norm): a correct squint must
then FAIL the comparison, which shows the check can fail.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the meson test maps this to a skip
    print("skipped: %s has no torch" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_encoder import length_batches, load_pooling, load_safetensors, pad_batch, pool  # noqa: E402

WRONG = ["no-local-window", "gelu-on-gate", "no-final-norm"]


def load_modernbert(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "modernbert":
        raise ValueError("%s: model_type %r is not modernbert" % (model_dir, cfg.get("model_type")))
    for key, want in (("hidden_activation", "gelu"), ("norm_bias", False),
                      ("attention_bias", False), ("mlp_bias", False)):
        if cfg.get(key, want) != want:
            raise ValueError("%s: %s is %r; the oracle is written for %r" % (model_dir, key, cfg.get(key), want))
    w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
    if "model.embeddings.tok_embeddings.weight" in w:  # ModernBertForMaskedLM
        w = {k[len("model."):]: v for k, v in w.items() if k.startswith("model.")}
    return cfg, w


def rotate(x, theta):
    """x [B, S, A, d] rotated by position (its index along S), rotate-half."""
    B, S, A, d = x.shape
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(S, dtype=torch.float32), inv)  # float32 angles
    cos = torch.cat((ang.cos(), ang.cos()), dim=-1)[None, :, None, :].to(x.dtype)
    sin = torch.cat((ang.sin(), ang.sin()), dim=-1)[None, :, None, :].to(x.dtype)
    rot = torch.cat((-x[..., d // 2:], x[..., :d // 2]), dim=-1)
    return x * cos + rot * sin


def modernbert_forward(cfg, w, ids, mask, wrong=None, dtype=torch.float32):
    """ids, mask: int64 [B, S]. Returns the last hidden state [B, S, H]."""
    T = lambda n: torch.from_numpy(w[n]).to(dtype)
    H, A = cfg["hidden_size"], cfg["num_attention_heads"]
    d = H // A
    eps = cfg.get("norm_eps", 1e-5)
    every = cfg.get("global_attn_every_n_layers", 3)
    half = cfg.get("local_attention", 128) // 2
    g_theta = float(cfg.get("global_rope_theta", 160000.0))
    l_theta = float(cfg.get("local_rope_theta", 10000.0))

    def ln(x, p):  # LayerNorm without bias
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * T(p + ".weight")

    def lin(x, p):
        return x @ T(p + ".weight").T

    B, S = ids.shape
    neg = torch.finfo(dtype).min
    key_mask = (1.0 - mask.to(dtype))[:, None, None, :] * neg
    pos = torch.arange(S)
    outside = ((pos[:, None] - pos[None, :]).abs() > half).to(dtype) * neg  # [S, S]
    x = ln(T("embeddings.tok_embeddings.weight")[ids], "embeddings.norm")
    for li in range(cfg["num_hidden_layers"]):
        p = "layers.%d." % li
        local = li % every != 0
        a_in = x if li == 0 else ln(x, p + "attn_norm")
        qkv = lin(a_in, p + "attn.Wqkv").view(B, S, 3, A, d)
        theta = l_theta if local else g_theta
        q, k, v = rotate(qkv[:, :, 0], theta), rotate(qkv[:, :, 1], theta), qkv[:, :, 2]
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d) + key_mask
        if local and wrong != "no-local-window":
            scores = torch.maximum(scores + outside, torch.tensor(neg, dtype=dtype))
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, S, H)
        x = x + lin(ctx, p + "attn.Wo")
        act, gate = lin(ln(x, p + "mlp_norm"), p + "mlp.Wi").chunk(2, dim=-1)
        if wrong == "gelu-on-gate":
            act, gate = gate, act
        x = x + lin(F.gelu(act) * gate, p + "mlp.Wo")
    return x if wrong == "no-final-norm" else ln(x, "final_norm")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", required=True, help="squint's TOK.jsonl")
    ap.add_argument("--hidden", required=True, help="squint's HID.npy [T, H]")
    ap.add_argument("--embeddings", required=True, help="squint's OUT.npy [N, H]")
    ap.add_argument("--tol", type=float, default=1e-4, help="max abs diff allowed (default 1e-4)")
    ap.add_argument("--batch", type=int, default=32, help="oracle batch size (default 32)")
    ap.add_argument("--wrong", choices=WRONG, help="change one mechanism: the comparison must then fail")
    ap.add_argument("--min-inputs", type=int, default=1, help="fail with fewer inputs")
    ap.add_argument("--min-long", type=int, default=0,
                    help="fail unless some input has at least this many tokens")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    cfg, w = load_modernbert(args.model_dir)
    mode, normalize = load_pooling(args.model_dir)
    pad = cfg.get("pad_token_id", 50283)
    seqs = []
    with open(args.tokens) as f:
        for line in f:
            if line.strip():
                seqs.append(json.loads(line)["ids"])
    rows_v = w["embeddings.tok_embeddings.weight"].shape[0]
    maxp = cfg.get("max_position_embeddings", 8192)
    if not seqs or any(not s or len(s) > maxp or min(s) < 0 or max(s) >= rows_v for s in seqs):
        raise SystemExit("oracle: FAIL: %s: empty, too long (> %d) or out-of-vocabulary inputs"
                         % (args.tokens, maxp))
    hid = torch.from_numpy(np.load(args.hidden)).double()
    emb = torch.from_numpy(np.load(args.embeddings)).double()
    longest = max(map(len, seqs))
    window = cfg.get("local_attention", 128)
    print("oracle (torch %s%s): %s: %d layers, hidden %d, %d heads, global every %d, window %d, "
          "rope %g / %g; %d inputs, %d tokens, lengths %d..%d (%d past the window); pooling %s%s"
          % (torch.__version__, ", WRONG: " + args.wrong if args.wrong else "", args.model_dir,
             cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"],
             cfg.get("global_attn_every_n_layers", 3), window,
             cfg.get("global_rope_theta", 160000.0), cfg.get("local_rope_theta", 10000.0),
             len(seqs), sum(map(len, seqs)), min(map(len, seqs)), longest,
             sum(len(s) > window // 2 + 1 for s in seqs), mode, " + normalize" if normalize else ""))
    rows, embs = [None] * len(seqs), [None] * len(seqs)
    with torch.inference_mode():
        for idx in length_batches(seqs, args.batch):
            ids, mask = pad_batch([seqs[j] for j in idx], pad)
            h = modernbert_forward(cfg, w, ids, mask, args.wrong)
            e = pool(h, mask, mode, normalize)
            for r, j in enumerate(idx):
                rows[j] = h[r, :len(seqs[j])].double()
                embs[j] = e[r].double()
    t_hid, t_emb = torch.cat(rows), torch.stack(embs)
    if t_hid.shape != hid.shape or t_emb.shape != emb.shape:
        raise SystemExit("oracle: FAIL: shapes %s / %s, expected %s / %s"
                         % (tuple(hid.shape), tuple(emb.shape), tuple(t_hid.shape), tuple(t_emb.shape)))
    d_hid = (hid - t_hid).abs().max().item()
    d_emb = (emb - t_emb).abs().max().item()
    per = [(r - hid[o:o + len(r)]).abs().max().item()
           for r, o in zip(rows, np.cumsum([0] + [len(s) for s in seqs[:-1]]))]
    worst = int(np.argmax(per))
    long_ix = [j for j, s in enumerate(seqs) if len(s) > window]
    n = F.normalize(t_emb, dim=-1)
    off = (n @ n.T)[~torch.eye(len(seqs), dtype=torch.bool)]
    print("hidden  max |squint - oracle| %.3e (max |x| %.3g); worst input #%d (%d tokens) %.3e"
          % (d_hid, t_hid.abs().max().item(), worst, len(seqs[worst]), per[worst]))
    if long_ix:
        print("long    %d inputs past the %d-token window (up to %d): max |diff| %.3e"
              % (len(long_ix), window, longest, max(per[j] for j in long_ix)))
    print("pooled  max |squint - oracle| %.3e; cosine min %.9f"
          % (d_emb, F.cosine_similarity(emb, t_emb, dim=-1).min().item()))
    if len(seqs) > 1:
        print("inputs  mean pairwise cosine of the oracle's embeddings %.4f (max %.4f)"
              % (off.mean().item(), off.max().item()))
    ok = (d_hid <= args.tol and d_emb <= args.tol and len(seqs) >= args.min_inputs
          and longest >= args.min_long)
    print("oracle: %s" % ("PASS" if ok else "FAIL (tol %.1e, %d inputs, at least %d; longest %d, "
                          "at least %d)" % (args.tol, len(seqs), args.min_inputs, longest,
                                            args.min_long)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
