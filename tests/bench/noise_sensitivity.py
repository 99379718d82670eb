#!/usr/bin/python3
"""How much a model's embeddings move when its linear weights are perturbed.

    noise_sensitivity.py SQUINT MODEL_DIR TEXTS [--eps 0.01] [--match REGEX]
                         [--seed 1] [--work DIR] [--json]

Every 2-D float32 weight of MODEL_DIR's model.safetensors whose name matches
REGEX (default: every one but the embedding, position and relative-bias
tables, the pooler and an LM head) gets Gaussian noise of EPS times its row's
RMS, the relative error an int8 weight or activation step gives (about 1%).
`squint embed-run` then compares the perturbed copy with the original on
TEXTS. The cosine it loses is the model's sensitivity: what a quantizer that
adds a given error to every linear can hope for on it.

Why: a fixture with random weights can amplify a perturbation layer over
layer, which trained encoders do not, and then an int8 figure on it says
more about the fixture than about the quantizer. Measured with this script
(docs/evidence.md, "Noise sensitivity"), a fixture is held to the
sensitivity of the bge-base one, itself 3-4x the trained models'.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

SKIP = re.compile(r"embed|position|relative|pooler|lm_head")


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        sys.exit(f"{path}: too short for a safetensors header")
    n = struct.unpack("<Q", raw[:8])[0]
    if n > len(raw) - 8:
        sys.exit(f"{path}: header length {n} beyond the file")
    return raw, json.loads(raw[8:8 + n]), 8 + n


def perturb(src_dir, dst_dir, eps, match, seed):
    """dst_dir: src_dir's files linked, model.safetensors rewritten with noise."""
    os.makedirs(dst_dir)
    for name in os.listdir(src_dir):
        if name != "model.safetensors":
            os.symlink(os.path.abspath(os.path.join(src_dir, name)), os.path.join(dst_dir, name))
    raw, header, base = read_safetensors(os.path.join(src_dir, "model.safetensors"))
    out = bytearray(raw)
    rng = np.random.default_rng(seed)
    names = []
    for name in sorted(header):  # sorted: the same noise whatever the header's order
        t = header[name]
        if name == "__metadata__" or t["dtype"] != "F32" or len(t["shape"]) != 2:
            continue
        if SKIP.search(name) or (match and not match.search(name)):
            continue
        s, e = t["data_offsets"]
        w = np.frombuffer(raw, dtype="<f4", count=(e - s) // 4, offset=base + s)
        w = w.reshape(t["shape"]).astype(np.float64)
        rms = np.sqrt((w * w).mean(axis=1, keepdims=True))
        w = w + eps * rms * rng.standard_normal(w.shape)
        out[base + s:base + e] = w.astype("<f4").tobytes()
        names.append(name)
    if not names:
        sys.exit(f"{src_dir}: no weight matched")
    with open(os.path.join(dst_dir, "model.safetensors"), "wb") as f:
        f.write(out)
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("squint")
    ap.add_argument("model")
    ap.add_argument("texts")
    ap.add_argument("--eps", type=float, default=0.01)
    ap.add_argument("--match", default="", help="perturb only weights whose name matches")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", help="keep the files here (default: a temporary folder)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not (a.eps > 0 and a.eps < 1):
        sys.exit("--eps: expected a relative error in (0, 1)")
    work = a.work or tempfile.mkdtemp(prefix="squint-noise-")
    try:
        os.makedirs(work, exist_ok=True)
        ref, noisy, rep = (os.path.join(work, x) for x in ("ref.npy", "noisy", "report.json"))
        if os.path.exists(noisy):
            shutil.rmtree(noisy)
        names = perturb(a.model, noisy, a.eps, re.compile(a.match) if a.match else None, a.seed)
        run = [a.squint, "embed-run"]
        subprocess.run(run + [a.model, "--input", a.texts, "--output", ref, "--quiet"], check=True)
        r = subprocess.run(run + [noisy, "--input", a.texts, "--reference", ref, "--report", rep,
                                  "--quiet"], stdout=subprocess.DEVNULL)
        if r.returncode not in (0, 1):  # 1: a gate of the model's own recipe, not an error
            sys.exit(f"embed-run failed ({r.returncode})")
        with open(rep) as f:
            cos = json.load(f)["metrics"]["cosine"]
        res = {"model": a.model, "eps": a.eps, "match": a.match, "weights": len(names),
               "texts": a.texts, "cos_loss": 1 - cos["mean"], "cos_min": cos["min"],
               "centred_cos_mean": cos["centred"]["mean"]}
        if a.json:
            print(json.dumps(res))
        else:
            print(f"{a.model}: {len(names)} weights, noise {a.eps:g} x row RMS: cosine loss "
                  f"{res['cos_loss']:.5f} (min {res['cos_min']:.5f}, centred mean "
                  f"{res['centred_cos_mean']:.5f})")
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
