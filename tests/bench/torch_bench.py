#!/usr/bin/python3
"""fp32 encoder throughput of the PyTorch oracle (tests/oracle/torch_encoder.py)
on a checkpoint directory: batch x seq random token ids, no padding,
torch.set_num_threads(N), inference_mode, warm-up then timed iterations.
Prints `torch seq/s=<float>` (the line bench_fp32_vs_torch.sh parses);
--info prints the torch version and the BLAS it was built with instead."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
try:
    import torch
    import torch_encoder as te
except ImportError:
    print("skipped: %s has no torch" % sys.executable)
    sys.exit(77)


def blas_info():
    """The BLAS/LAPACK/oneDNN lines of torch.__config__.show()."""
    keys = ("BLAS_INFO", "LAPACK_INFO", "USE_MKL", "USE_MKLDNN", "USE_OPENMP", "MKL", "OpenMP", "oneDNN")
    out = []
    for line in torch.__config__.show().splitlines():
        for part in line.split(","):
            part = part.strip().lstrip("- ").replace("Build settings:", "").strip()
            if part and any(k in part for k in keys) and part not in out:
                out.append(part)
    return out


def loaded_blas():
    """BLAS/LAPACK shared objects actually mapped into this process after a
    matmul: Debian's torch says BLAS_INFO=generic and gets whichever
    libblas.so.3 the alternatives system points at (OpenBLAS, BLIS, reference)."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                if any(k in base for k in ("blas", "lapack", "mkl", "blis")):
                    libs.add("%s -> %s" % (path, os.path.realpath(path)) if os.path.realpath(path) != path else path)
    except OSError:
        pass
    return sorted(libs)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model_dir", nargs="?")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--info", action="store_true", help="print torch version and BLAS, then exit")
    ap.add_argument("--dynamic-int8", action="store_true",
                    help="torch.ao.quantization.quantize_dynamic (onednn engine) on every nn.Linear")
    a = ap.parse_args()
    if a.info:
        print("torch %s (%s)" % (torch.__version__, torch.__file__))
        for line in blas_info():
            print("  build: " + line)
        for lib in loaded_blas():
            print("  loaded: " + lib)
        return 0
    if not a.model_dir:
        ap.error("model_dir is required")
    if min(a.batch, a.seq, a.threads, a.iters) < 1 or a.warmup < 0:
        ap.error("--batch, --seq, --threads, --iters must be >= 1, --warmup >= 0")
    torch.set_num_threads(a.threads)
    cfg, w = te.load_checkpoint(a.model_dir)
    if a.seq > cfg["max_position_embeddings"]:
        ap.error("--seq %d > max_position_embeddings %d" % (a.seq, cfg["max_position_embeddings"]))
    model = te.TorchBert(cfg, w)
    del w
    label = "torch"
    if a.dynamic_int8:
        # The onednn engine; count the modules really swapped for dynamic
        # int8 ones (nn.MultiheadAttention keeps its fused in_proj in fp32).
        torch.backends.quantized.engine = "onednn"
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        n_q = sum(1 for m in model.modules()
                  if isinstance(m, torch.ao.nn.quantized.dynamic.Linear))
        n_f = sum(1 for m in model.modules() if type(m) is torch.nn.Linear)
        print("dynamic int8: %d quantized Linear modules, %d fp32 Linear left, engine %s"
              % (n_q, n_f, torch.backends.quantized.engine), file=sys.stderr)
        if n_q == 0:
            print("torch_bench: quantize_dynamic replaced no module", file=sys.stderr)
            return 1
        label = "torch-dynint8"
        # torch 1.13's TransformerEncoderLayer fast-path check reads
        # linear1.weight as a tensor, which a dynamic quantized Linear is
        # not: take the regular path (training flag only; dropout is 0).
        for m in model.modules():
            if isinstance(m, torch.nn.TransformerEncoderLayer):
                m.train()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(104, cfg["vocab_size"], (a.batch, a.seq), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = torch.ones_like(ids)
    mode, normalize = te.load_pooling(a.model_dir)
    with torch.inference_mode():
        for _ in range(a.warmup):
            te.pool(model(ids, mask), mask, mode, normalize)
        t0 = time.perf_counter()
        for _ in range(a.iters):
            te.pool(model(ids, mask), mask, mode, normalize)
        dt = time.perf_counter() - t0
    print("%s seq/s=%.3f" % (label, a.batch * a.iters / dt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
