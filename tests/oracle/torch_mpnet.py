#!/usr/bin/python3
"""Independent PyTorch oracle for squint's MPNet encoder (all-mpnet-base-v2's family).

Written from the MPNet paper's encoder as Hugging Face's MPNetModel lays it
out, with PyTorch primitives only (einsum attention, erf GELU, LayerNorm
written out): no transformers, no squint code. It reads the Hugging Face
folder itself (config.json with model_type "mpnet", model.safetensors,
modules.json / 1_Pooling) and checks:

  - position ids as RoBERTa makes them: pad_token_id + 1 + the count of
    non-pad tokens so far (pad tokens: pad_token_id);
  - a relative attention bias: key j, query i fall in bucket b(j - i)
    (32 buckets: 16 per direction, 8 exact distances, then logarithmic up
    to 128, in float32), encoder.relative_attention_bias.weight[b, head]
    added to every layer's scores before the softmax;
  - post-LN blocks: LN(x + attn(x)), LN(x + W2 gelu(W1 x)).

compare mode reads squint's TOK.jsonl / HID.npy / OUT.npy (from
`squint embed --tokens-output --hidden-output`), runs the same ids as one
padded batch (squint packs them without padding), and reports max |diff| of
the hidden states and the pooled embeddings, the mean pairwise cosine of the
embeddings (inputs must give different outputs), and exits 1 above --tol.

--wrong MECH removes one mechanism from the oracle (no-relative-bias,
index-positions): a correct squint must then FAIL the comparison, which
shows the check can fail.
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


def load_mpnet(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "mpnet":
        raise ValueError("%s: model_type %r is not mpnet" % (model_dir, cfg.get("model_type")))
    w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
    if "mpnet.embeddings.word_embeddings.weight" in w:  # MPNetFor* checkpoints
        w = {k[6:]: v for k, v in w.items() if k.startswith("mpnet.")}
    return cfg, w


def relative_bucket(rel, num_buckets=32, max_distance=128):
    """Bucket of key - query distance rel (an int64 tensor), float32 steps."""
    n = -rel
    half = num_buckets // 2
    ret = (n < 0).long() * half
    n = n.abs()
    exact = half // 2
    large = exact + (torch.log(n.float() / exact) / math.log(max_distance / exact)
                     * (half - exact)).long()
    large = torch.clamp(large, max=half - 1)
    return ret + torch.where(n < exact, n, large)


def mpnet_forward(cfg, w, ids, mask, wrong=None, dtype=torch.float32):
    """ids, mask: int64 [B, S]. Returns the last hidden state [B, S, H]."""
    T = lambda n: torch.from_numpy(w[n]).to(dtype)
    H = cfg["hidden_size"]
    A = cfg["num_attention_heads"]
    d = H // A
    eps = cfg.get("layer_norm_eps", 1e-5)
    pad = cfg.get("pad_token_id", 1)

    def ln(x, p):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * T(p + ".weight") + T(p + ".bias")

    def lin(x, p):
        return x @ T(p + ".weight").T + T(p + ".bias")

    B, S = ids.shape
    if wrong == "index-positions":
        pos = torch.arange(S)[None].expand(B, S)
    else:
        real = (ids != pad).long()
        pos = torch.cumsum(real, dim=1) * real + pad
    x = T("embeddings.word_embeddings.weight")[ids] + T("embeddings.position_embeddings.weight")[pos]
    x = ln(x, "embeddings.LayerNorm")
    key_mask = (1.0 - mask.to(dtype))[:, None, None, :] * torch.finfo(dtype).min
    if wrong == "no-relative-bias":
        bias = torch.zeros((A, S, S), dtype=dtype)
    else:
        i = torch.arange(S)
        b = relative_bucket(i[None, :] - i[:, None])  # [query, key]
        bias = T("encoder.relative_attention_bias.weight")[b].permute(2, 0, 1)  # [A, S, S]
    for li in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % li
        q = lin(x, p + "attention.attn.q").view(B, S, A, d)
        k = lin(x, p + "attention.attn.k").view(B, S, A, d)
        v = lin(x, p + "attention.attn.v").view(B, S, A, d)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d) + bias[None] + key_mask
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, S, H)
        x = ln(lin(ctx, p + "attention.attn.o") + x, p + "attention.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", required=True, help="squint's TOK.jsonl")
    ap.add_argument("--hidden", required=True, help="squint's HID.npy [T, H]")
    ap.add_argument("--embeddings", required=True, help="squint's OUT.npy [N, H]")
    ap.add_argument("--tol", type=float, default=1e-4, help="max abs diff allowed (default 1e-4)")
    ap.add_argument("--batch", type=int, default=64, help="oracle batch size (default 64)")
    ap.add_argument("--wrong", choices=["no-relative-bias", "index-positions"],
                    help="remove one mechanism: the comparison must then fail")
    ap.add_argument("--min-inputs", type=int, default=1, help="fail with fewer inputs")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    cfg, w = load_mpnet(args.model_dir)
    mode, normalize = load_pooling(args.model_dir)
    pad = cfg.get("pad_token_id", 1)
    seqs = []
    with open(args.tokens) as f:
        for line in f:
            if line.strip():
                seqs.append(json.loads(line)["ids"])
    max_tokens = cfg["max_position_embeddings"] - pad - 1
    if not seqs or any(not s or len(s) > max_tokens or min(s) < 0 or max(s) >= cfg["vocab_size"]
                       for s in seqs):
        raise SystemExit("oracle: FAIL: %s: empty, too long (> %d) or out-of-vocabulary inputs"
                         % (args.tokens, max_tokens))
    hid = torch.from_numpy(np.load(args.hidden)).double()
    emb = torch.from_numpy(np.load(args.embeddings)).double()
    print("oracle (torch %s%s): %s: %d layers, hidden %d, %d heads; %d inputs, %d tokens, "
          "lengths %d..%d; pooling %s%s"
          % (torch.__version__, ", WRONG: " + args.wrong if args.wrong else "", args.model_dir,
             cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], len(seqs),
             sum(map(len, seqs)), min(map(len, seqs)), max(map(len, seqs)), mode,
             " + normalize" if normalize else ""))
    rows, embs = [None] * len(seqs), [None] * len(seqs)
    with torch.inference_mode():
        for idx in length_batches(seqs, args.batch):
            ids, mask = pad_batch([seqs[j] for j in idx], pad)
            h = mpnet_forward(cfg, w, ids, mask, args.wrong)
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
    n = F.normalize(t_emb, dim=-1)
    cos = n @ n.T
    off = cos[~torch.eye(len(seqs), dtype=torch.bool)]
    print("hidden  max |squint - oracle| %.3e (max |x| %.3g); worst input #%d (%d tokens) %.3e"
          % (d_hid, t_hid.abs().max().item(), worst, len(seqs[worst]), per[worst]))
    print("pooled  max |squint - oracle| %.3e; cosine min %.9f"
          % (d_emb, F.cosine_similarity(emb, t_emb, dim=-1).min().item()))
    if len(seqs) > 1:
        print("inputs  mean pairwise cosine of the oracle's embeddings %.4f (max %.4f)"
              % (off.mean().item(), off.max().item()))
    ok = d_hid <= args.tol and d_emb <= args.tol and len(seqs) >= args.min_inputs
    print("oracle: %s" % ("PASS" if ok else "FAIL (tol %.1e, %d inputs, at least %d)"
                          % (args.tol, len(seqs), args.min_inputs)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
