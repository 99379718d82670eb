#!/usr/bin/python3
"""Independent PyTorch fp32 oracle for squint's BERT encoder.

The encoder is built from stock torch.nn modules (Embedding, LayerNorm,
TransformerEncoderLayer with norm_first=False, gelu), loaded from a Hugging
Face checkpoint directory (config.json, model.safetensors, modules.json,
1_Pooling/config.json). The safetensors file is parsed here with numpy; no
transformers/safetensors packages are needed.

Modes:
  compare  (default) read squint's TOK.jsonl / HID.npy / OUT.npy, run the
           same token ids through torch in a different batch composition,
           report max abs diff and min cosine, exit 1 above --tol.
  --self-check  compare the TransformerEncoderLayer path against a second,
           hand-written implementation of HF BertModel math (einsum
           attention, erf GELU) run in float64.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # the meson test maps this to a skip
    print("skipped: %s has no torch" % sys.executable)
    sys.exit(77)


# ---- checkpoint loading ------------------------------------------------------

def load_safetensors(path):
    """Returns {name: float32 numpy array}. F32, F16 and BF16 only."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (hlen,) = struct.unpack("<Q", raw[:8])
    if hlen > len(raw) - 8:
        raise ValueError("%s: header length %d past end of file" % (path, hlen))
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        buf = raw[base + start:base + end]
        shape = tuple(info["shape"])
        dt = info["dtype"]
        if dt == "F32":
            a = np.frombuffer(buf, dtype="<f4")
        elif dt == "F16":
            a = np.frombuffer(buf, dtype="<f2").astype(np.float32)
        elif dt == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, dt))
        if a.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError("%s: tensor %s: %d values for shape %s" % (path, name, a.size, shape))
        out[name] = np.array(a.reshape(shape), dtype=np.float32)  # copy: writable
    return out


def load_checkpoint(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "bert":
        raise ValueError("%s: model_type %r is not bert" % (model_dir, cfg.get("model_type")))
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("%s: only absolute position embeddings" % model_dir)
    if cfg.get("hidden_act", "gelu") != "gelu":
        raise ValueError("%s: hidden_act %r is not gelu" % (model_dir, cfg.get("hidden_act")))
    w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
    if "bert.embeddings.word_embeddings.weight" in w:  # BertFor* checkpoints
        w = {k[5:]: v for k, v in w.items() if k.startswith("bert.")}
    return cfg, w


def load_pooling(model_dir):
    """(mode, normalize) from sentence-transformers files; bge defaults (cls,
    normalize) when they are absent. Accepts the classic boolean keys and the
    newer "pooling_mode": "cls" form."""
    mode, normalize = "cls", True
    mpath = os.path.join(model_dir, "modules.json")
    pool_dir = "1_Pooling"
    if os.path.exists(mpath):
        with open(mpath) as f:
            modules = json.load(f)
        normalize = any(m["type"].endswith("Normalize") for m in modules)
        for m in modules:
            if m["type"].endswith("Pooling"):
                pool_dir = m["path"]
    ppath = os.path.join(model_dir, pool_dir, "config.json")
    if os.path.exists(ppath):
        with open(ppath) as f:
            p = json.load(f)
        if "pooling_mode" in p:
            mode = p["pooling_mode"]
        elif p.get("pooling_mode_cls_token"):
            mode = "cls"
        elif p.get("pooling_mode_mean_tokens"):
            mode = "mean"
        else:
            raise ValueError("%s: unsupported pooling %s" % (ppath, p))
        if mode not in ("cls", "mean"):
            raise ValueError("%s: unsupported pooling mode %r" % (ppath, mode))
    return mode, normalize


# ---- encoder 1: stock torch.nn modules ----------------------------------------

class TorchBert(nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        H = cfg["hidden_size"]
        A = cfg["num_attention_heads"]
        Fd = cfg["intermediate_size"]
        eps = cfg.get("layer_norm_eps", 1e-12)
        self.word = nn.Embedding.from_pretrained(torch.from_numpy(w["embeddings.word_embeddings.weight"]))
        self.pos = nn.Embedding.from_pretrained(torch.from_numpy(w["embeddings.position_embeddings.weight"]))
        self.tok_type = nn.Embedding.from_pretrained(torch.from_numpy(w["embeddings.token_type_embeddings.weight"]))
        self.ln = nn.LayerNorm(H, eps=eps)
        self._set(self.ln.weight, w["embeddings.LayerNorm.weight"])
        self._set(self.ln.bias, w["embeddings.LayerNorm.bias"])
        self.layers = nn.ModuleList()
        for i in range(cfg["num_hidden_layers"]):
            p = "encoder.layer.%d." % i
            L = nn.TransformerEncoderLayer(d_model=H, nhead=A, dim_feedforward=Fd, dropout=0.0,
                                           activation="gelu", layer_norm_eps=eps,
                                           batch_first=True, norm_first=False)
            qkv_w = np.concatenate([w[p + "attention.self.%s.weight" % n] for n in ("query", "key", "value")])
            qkv_b = np.concatenate([w[p + "attention.self.%s.bias" % n] for n in ("query", "key", "value")])
            self._set(L.self_attn.in_proj_weight, qkv_w)
            self._set(L.self_attn.in_proj_bias, qkv_b)
            self._set(L.self_attn.out_proj.weight, w[p + "attention.output.dense.weight"])
            self._set(L.self_attn.out_proj.bias, w[p + "attention.output.dense.bias"])
            self._set(L.norm1.weight, w[p + "attention.output.LayerNorm.weight"])
            self._set(L.norm1.bias, w[p + "attention.output.LayerNorm.bias"])
            self._set(L.linear1.weight, w[p + "intermediate.dense.weight"])
            self._set(L.linear1.bias, w[p + "intermediate.dense.bias"])
            self._set(L.linear2.weight, w[p + "output.dense.weight"])
            self._set(L.linear2.bias, w[p + "output.dense.bias"])
            self._set(L.norm2.weight, w[p + "output.LayerNorm.weight"])
            self._set(L.norm2.bias, w[p + "output.LayerNorm.bias"])
            self.layers.append(L)
        self.eval()

    @staticmethod
    def _set(param, arr):
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if tuple(param.shape) != tuple(t.shape):
            raise ValueError("shape %s does not fit parameter %s" % (tuple(t.shape), tuple(param.shape)))
        with torch.no_grad():
            param.copy_(t)

    def forward(self, ids, mask, types=None):
        """ids, mask, types: int64 [B, S] (mask 1 = real token; types None:
        all 0). Returns [B, S, H]; rows at padding positions are unspecified."""
        S = ids.shape[1]
        pos = torch.arange(S, dtype=torch.long).unsqueeze(0)
        tt = torch.zeros_like(ids) if types is None else types
        x = self.word(ids) + self.pos(pos) + self.tok_type(tt)
        x = self.ln(x)
        pad = mask == 0  # True = ignore this key
        for L in self.layers:
            x = L(x, src_key_padding_mask=pad)
        return x


# ---- encoder 2: HF BertModel math written out (float64) --------------------------

def reference_bert(cfg, w, ids, mask, dtype=torch.float64):
    T = lambda n: torch.from_numpy(w[n]).to(dtype)
    H = cfg["hidden_size"]
    A = cfg["num_attention_heads"]
    d = H // A
    eps = cfg.get("layer_norm_eps", 1e-12)

    def ln(x, p):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * T(p + ".weight") + T(p + ".bias")

    def lin(x, p):
        return x @ T(p + ".weight").T + T(p + ".bias")

    B, S = ids.shape
    x = T("embeddings.word_embeddings.weight")[ids] + T("embeddings.position_embeddings.weight")[:S][None] \
        + T("embeddings.token_type_embeddings.weight")[0][None, None]
    x = ln(x, "embeddings.LayerNorm")
    # HF's extended attention mask: add the dtype's most negative value to padded keys
    bias = (1.0 - mask.to(dtype))[:, None, None, :] * torch.finfo(dtype).min
    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        q = lin(x, p + "attention.self.query").view(B, S, A, d)
        k = lin(x, p + "attention.self.key").view(B, S, A, d)
        v = lin(x, p + "attention.self.value").view(B, S, A, d)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d) + bias
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, S, H)
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    return x


# ---- batching, pooling, comparison ----------------------------------------------

def pad_batch(seqs, pad_id):
    S = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), S), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), S), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids, mask


def length_batches(seqs, batch, long_from=257):
    """Index lists covering seqs: sorted by length, up to `batch` inputs of
    fewer than long_from tokens together, every longer input alone, so that
    no short input is padded to a long one's length (a batch of 20 short
    inputs padded to 1,048 tokens costs 20 long inputs)."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out, cur = [], []
    for i in order:
        if len(seqs[i]) >= long_from:
            out.append([i])
            continue
        cur.append(i)
        if len(cur) == batch:
            out.append(cur)
            cur = []
    return out + ([cur] if cur else [])


def pool(hid, mask, mode, normalize):
    if mode == "cls":
        e = hid[:, 0]
    else:
        m = mask.to(hid.dtype).unsqueeze(-1)
        e = (hid * m).sum(1) / m.sum(1).clamp(min=1)
    return F.normalize(e, p=2, dim=-1) if normalize else e


def run_encoder(fn, seqs, pad_id, batch, mode, normalize):
    """Runs fn(ids, mask) over padded batches. Returns (list of [len_i, H]
    valid hidden rows per input, [N, H] pooled embeddings), float64."""
    rows, embs = [], []
    for b0 in range(0, len(seqs), batch):
        chunk = seqs[b0:b0 + batch]
        ids, mask = pad_batch(chunk, pad_id)
        hid = fn(ids, mask)
        emb = pool(hid, mask, mode, normalize)
        for i, s in enumerate(chunk):
            rows.append(hid[i, :len(s)].double())
        embs.append(emb.double())
    return rows, torch.cat(embs)


def diff_stats(a, b):
    """max |a - b|, min row cosine, max |a| for 2-D float64 tensors."""
    a, b = a.double(), b.double()
    cos = F.cosine_similarity(a, b, dim=-1, eps=1e-30)
    return (a - b).abs().max().item(), cos.min().item(), a.abs().max().item()


def report(label, a, b, tol):
    mad, mcos, amax = diff_stats(a, b)
    ok = mad <= tol
    print("%-34s max_abs_diff=%.3e (max|x|=%.3g, rel=%.2e)  min_cos=%.9f  %s"
          % (label, mad, amax, mad / max(amax, 1e-30), mcos, "ok" if ok else "FAIL (tol %.1e)" % tol))
    return ok


def read_tokens(path, cfg, max_seq):
    seqs = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            ids = json.loads(line)["ids"]
            if not ids or not all(isinstance(t, int) and 0 <= t < cfg["vocab_size"] for t in ids):
                raise ValueError("%s:%d: ids empty or out of the vocabulary range" % (path, n))
            if len(ids) > max_seq:
                raise ValueError("%s:%d: %d ids > max_position_embeddings %d" % (path, n, len(ids), max_seq))
            seqs.append(ids)
    return seqs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--tokens", help="squint's TOK.jsonl")
    ap.add_argument("--hidden", help="squint's HID.npy [T, H]")
    ap.add_argument("--embeddings", help="squint's OUT.npy [N, H]")
    ap.add_argument("--input", help="the text file squint read (checks the line count)")
    ap.add_argument("--tol", type=float, default=1e-4, help="max abs diff allowed (default 1e-4)")
    ap.add_argument("--batch", type=int, default=0, help="oracle batch size (default: all inputs in one batch)")
    ap.add_argument("--min-at-max", type=int, default=0,
                    help="require at least this many inputs truncated to max_position_embeddings tokens")
    ap.add_argument("--self-check", action="store_true",
                    help="compare the nn.TransformerEncoderLayer path with a hand-written float64 BERT")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    ap.add_argument("--seed", type=int, default=0, help="seed for --self-check's random inputs")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.batch < 0:
        ap.error("--batch must be >= 0")

    cfg, w = load_checkpoint(args.model_dir)
    mode, normalize = load_pooling(args.model_dir)
    pad_id = cfg.get("pad_token_id", 0) or 0
    max_seq = cfg["max_position_embeddings"]
    model = TorchBert(cfg, w)
    print("oracle: torch %s, %s: %d layers, hidden %d, %d heads, ffn %d, vocab %d, pooling %s%s"
          % (torch.__version__, args.model_dir, cfg["num_hidden_layers"], cfg["hidden_size"],
             cfg["num_attention_heads"], cfg["intermediate_size"], cfg["vocab_size"], mode,
             " + normalize" if normalize else ""))

    ok = True
    with torch.inference_mode():
        if args.self_check:
            # Random ids of varied lengths (incl. one at max length) in one padded batch.
            g = np.random.default_rng(args.seed)
            lens = sorted({2, 3, min(max_seq, 17), max_seq} | set(g.integers(2, max_seq + 1, 4).tolist()))
            seqs = [[101] + g.integers(104, cfg["vocab_size"], n - 2).tolist() + [102] for n in lens]
            seqs = [[min(t, cfg["vocab_size"] - 1) for t in s] for s in seqs]
            batch = args.batch or len(seqs)
            r_rows, r_emb = run_encoder(lambda i, m: reference_bert(cfg, w, i, m), seqs, pad_id, batch, mode, normalize)
            t_rows, t_emb = run_encoder(model, seqs, pad_id, batch, mode, normalize)
            # The same inputs one at a time (no padding) must agree too.
            s_rows, s_emb = run_encoder(model, seqs, pad_id, 1, mode, normalize)
            print("self-check: %d sequences, lengths %s" % (len(seqs), lens))
            ok &= report("hidden: nn.TEL fp32 vs ref f64", torch.cat(t_rows), torch.cat(r_rows), args.tol)
            ok &= report("pooled: nn.TEL fp32 vs ref f64", t_emb, r_emb, args.tol)
            ok &= report("hidden: padded vs unpadded fp32", torch.cat(t_rows), torch.cat(s_rows), args.tol)
            lay = reference_bert(cfg, w, *pad_batch(seqs[-1:], pad_id))[0]
            dims = cfg.get("squint_fixture", {}).get("outlier_dims", [])
            if dims:
                rest = [d for d in range(cfg["hidden_size"]) if d not in dims]
                print("activations: mean|x| outlier dims %s = %.3g, other dims = %.3g"
                      % (dims, lay[:, dims].abs().mean().item(), lay[:, rest].abs().mean().item()))

        if args.tokens:
            if not (args.hidden and args.embeddings):
                ap.error("--tokens needs --hidden and --embeddings")
            seqs = read_tokens(args.tokens, cfg, max_seq)
            if not seqs:
                raise SystemExit("oracle: %s has no inputs" % args.tokens)
            if args.input:
                with open(args.input, encoding="utf-8", errors="replace") as f:
                    nlines = sum(1 for _ in f)
                if nlines != len(seqs):
                    print("oracle: FAIL: %s has %d lines but %s has %d token lines"
                          % (args.input, nlines, args.tokens, len(seqs)))
                    ok = False
            at_max = sum(len(s) == max_seq for s in seqs)
            bad_frame = sum(s[0] != 101 and s[-1] != 102 for s in seqs)
            print("oracle: %d inputs, %d tokens, lengths %d..%d, %d at max length %d"
                  % (len(seqs), sum(map(len, seqs)), min(map(len, seqs)), max(map(len, seqs)), at_max, max_seq))
            if at_max < args.min_at_max:
                print("oracle: FAIL: expected at least %d inputs truncated to %d tokens" % (args.min_at_max, max_seq))
                ok = False
            if bad_frame:
                print("oracle: note: %d inputs do not look like [CLS] ... [SEP]" % bad_frame)
            hid = torch.from_numpy(np.load(args.hidden)).double()
            emb = torch.from_numpy(np.load(args.embeddings)).double()
            H = cfg["hidden_size"]
            T = sum(map(len, seqs))
            if tuple(hid.shape) != (T, H):
                raise SystemExit("oracle: FAIL: %s has shape %s, expected (%d, %d)" % (args.hidden, tuple(hid.shape), T, H))
            if tuple(emb.shape) != (len(seqs), H):
                raise SystemExit("oracle: FAIL: %s has shape %s, expected (%d, %d)"
                                 % (args.embeddings, tuple(emb.shape), len(seqs), H))
            batch = args.batch or len(seqs)
            t_rows, t_emb = run_encoder(model, seqs, pad_id, batch, mode, normalize)
            ok &= report("hidden: squint vs torch", hid, torch.cat(t_rows), args.tol)
            ok &= report("pooled: squint vs torch", emb, t_emb, args.tol)
            # Where it differs most, for a failing run.
            per_input = [(r - hid[o:o + len(r)]).abs().max().item()
                         for r, o in zip(t_rows, np.cumsum([0] + [len(s) for s in seqs[:-1]]))]
            worst = int(np.argmax(per_input))
            print("oracle: worst input #%d (%d tokens): max_abs_diff %.3e"
                  % (worst, len(seqs[worst]), per_input[worst]))

    if not (args.self_check or args.tokens):
        ap.error("nothing to do: give --self-check and/or --tokens/--hidden/--embeddings")
    print("oracle: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
