#!/usr/bin/python3
"""Independent PyTorch oracle for squint's NomicBERT encoder (nomic-embed-text v1 / v1.5).

Written from NomicBertModel's definition (nomic-ai's modeling_hf_nomic_bert.py,
read for its arithmetic, not copied) with PyTorch primitives only: no
transformers, no squint code. It reads the Hugging Face folder itself
(config.json with model_type "nomic_bert", model.safetensors through
torch_encoder's own reader, modules.json / 1_Pooling) and checks:

  - embeddings: word + token type 0, then emb_ln; no position table;
  - rotary positions on q and k of every head, GPT-NeoX "rotate half":
    inv_freq = 1 / base^(arange(0, d, 2) / d) and angle = pos * inv_freq in
    float32, x * cos + rotate_half(x) * sin with rotate_half(x1, x2) =
    (-x2, x1), dimension i paired with i + d/2;
  - scores / sqrt(d), softmax, fused Wqkv rows [q | k | v], no biases;
  - post-LN blocks: LN(x + out_proj(attn)), LN(x + fc2(fc11(x) * silu(fc12(x)))).

compare mode reads squint's TOK.jsonl / HID.npy / OUT.npy (from
`squint embed --tokens-output --hidden-output`), runs the same ids in padded
batches of similar length, and reports max |diff| of the hidden states and
the pooled embeddings, the mean pairwise cosine of the embeddings (inputs
must give different outputs), and exits 1 above --tol.

--wrong MECH changes one mechanism (no-rotary, interleaved-rotary: GPT-J's
adjacent pairs, gate-up-swapped: fc12 * silu(fc11)): a correct squint must
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


def load_nomic(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "nomic_bert":
        raise ValueError("%s: model_type %r is not nomic_bert" % (model_dir, cfg.get("model_type")))
    for key, want in (("activation_function", "swiglu"), ("prenorm", False),
                      ("rotary_emb_fraction", 1.0), ("rotary_emb_interleaved", False),
                      ("rotary_scaling_factor", None)):
        if cfg.get(key) != want:
            raise ValueError("%s: %s is %r; the oracle is written for %r" % (model_dir, key, cfg.get(key), want))
    return cfg, load_safetensors(os.path.join(model_dir, "model.safetensors"))


def rotary(x, base, interleaved=False):
    """x [B, S, A, d] rotated by position (its index along S)."""
    B, S, A, d = x.shape
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(S, dtype=torch.float32), inv)  # [S, d/2] float32
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    if interleaved:  # pairs (2i, 2i+1)
        cos = cos.repeat_interleave(2, dim=-1)[None, :, None, :]
        sin = sin.repeat_interleave(2, dim=-1)[None, :, None, :]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        rot = torch.stack((-x2, x1), dim=-1).reshape(x.shape)
    else:  # pairs (i, i + d/2)
        cos = torch.cat((cos, cos), dim=-1)[None, :, None, :]
        sin = torch.cat((sin, sin), dim=-1)[None, :, None, :]
        x1, x2 = x[..., :d // 2], x[..., d // 2:]
        rot = torch.cat((-x2, x1), dim=-1)
    return x * cos + rot * sin


def nomic_forward(cfg, w, ids, mask, wrong=None, dtype=torch.float32):
    """ids, mask: int64 [B, S]. Returns the last hidden state [B, S, H]."""
    T = lambda n: torch.from_numpy(w[n]).to(dtype)
    H, A = cfg["n_embd"], cfg["n_head"]
    d = H // A
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    base = float(cfg.get("rotary_emb_base", 10000.0))

    def ln(x, p):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * T(p + ".weight") + T(p + ".bias")

    def lin(x, p):
        return x @ T(p + ".weight").T

    B, S = ids.shape
    x = T("embeddings.word_embeddings.weight")[ids]
    if cfg.get("type_vocab_size", 2) > 0:
        x = x + T("embeddings.token_type_embeddings.weight")[0]
    x = ln(x, "emb_ln")
    key_mask = (1.0 - mask.to(dtype))[:, None, None, :] * torch.finfo(dtype).min
    for li in range(cfg["n_layer"]):
        p = "encoder.layers.%d." % li
        qkv = lin(x, p + "attn.Wqkv").view(B, S, 3, A, d)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        if wrong != "no-rotary":
            q = rotary(q, base, wrong == "interleaved-rotary")
            k = rotary(k, base, wrong == "interleaved-rotary")
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d) + key_mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, S, H)
        x = ln(lin(ctx, p + "attn.out_proj") + x, p + "norm1")
        up, gate = lin(x, p + "mlp.fc11"), lin(x, p + "mlp.fc12")
        if wrong == "gate-up-swapped":
            up, gate = gate, up
        x = ln(lin(up * F.silu(gate), p + "mlp.fc2") + x, p + "norm2")
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", required=True, help="squint's TOK.jsonl")
    ap.add_argument("--hidden", required=True, help="squint's HID.npy [T, H]")
    ap.add_argument("--embeddings", required=True, help="squint's OUT.npy [N, H]")
    ap.add_argument("--tol", type=float, default=1e-4, help="max abs diff allowed (default 1e-4)")
    ap.add_argument("--batch", type=int, default=32, help="oracle batch size (default 32)")
    ap.add_argument("--wrong", choices=["no-rotary", "interleaved-rotary", "gate-up-swapped"],
                    help="change one mechanism: the comparison must then fail")
    ap.add_argument("--min-inputs", type=int, default=1, help="fail with fewer inputs")
    ap.add_argument("--min-long", type=int, default=0,
                    help="fail unless some input has at least this many tokens")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    cfg, w = load_nomic(args.model_dir)
    mode, normalize = load_pooling(args.model_dir)
    pad = cfg.get("pad_token_id", 0)
    seqs = []
    with open(args.tokens) as f:
        for line in f:
            if line.strip():
                seqs.append(json.loads(line)["ids"])
    rows_v = w["embeddings.word_embeddings.weight"].shape[0]
    if not seqs or any(not s or len(s) > cfg["n_positions"] or min(s) < 0 or max(s) >= rows_v
                       for s in seqs):
        raise SystemExit("oracle: FAIL: %s: empty, too long (> %d) or out-of-vocabulary inputs"
                         % (args.tokens, cfg["n_positions"]))
    hid = torch.from_numpy(np.load(args.hidden)).double()
    emb = torch.from_numpy(np.load(args.embeddings)).double()
    longest = max(map(len, seqs))
    print("oracle (torch %s%s): %s: %d layers, hidden %d, %d heads, rotary base %g; %d inputs, "
          "%d tokens, lengths %d..%d; pooling %s%s"
          % (torch.__version__, ", WRONG: " + args.wrong if args.wrong else "", args.model_dir,
             cfg["n_layer"], cfg["n_embd"], cfg["n_head"], cfg.get("rotary_emb_base", 10000.0),
             len(seqs), sum(map(len, seqs)), min(map(len, seqs)), longest, mode,
             " + normalize" if normalize else ""))
    # batches of similar length (long inputs alone): padding a 2,000-token
    # input's batch would cost batch x heads x 2,000^2 scores
    rows, embs = [None] * len(seqs), [None] * len(seqs)
    with torch.inference_mode():
        for idx in length_batches(seqs, args.batch):
            ids, mask = pad_batch([seqs[j] for j in idx], pad)
            h = nomic_forward(cfg, w, ids, mask, args.wrong)
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
    long_ix = [j for j, s in enumerate(seqs) if len(s) > 512]
    n = F.normalize(t_emb, dim=-1)
    cos = n @ n.T
    off = cos[~torch.eye(len(seqs), dtype=torch.bool)]
    print("hidden  max |squint - oracle| %.3e (max |x| %.3g); worst input #%d (%d tokens) %.3e"
          % (d_hid, t_hid.abs().max().item(), worst, len(seqs[worst]), per[worst]))
    if long_ix:
        print("long    %d inputs past 512 tokens (up to %d): max |diff| %.3e"
              % (len(long_ix), longest, max(per[j] for j in long_ix)))
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
