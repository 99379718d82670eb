#!/usr/bin/env bash
# The cross-encoder tables of docs/evidence.md "Cross-encoders": a generated
# cross-encoder at the shape of cross-encoder/ms-marco-MiniLM-L-6-v2 (6
# layers, hidden 384, 12 heads, FFN 1536; real bge vocabulary) with the
# outlier mechanisms of the worst-case fixtures (--outliers 2: outlier dims
# and token-specific massive activations), sigmoid activation:
#   1. fp32 parity with the independent PyTorch oracle on 300 QASPER pairs;
#   2. int8 (default recipe) and int4-g128, calibrated on the bundled
#      question/evidence pairs: pair-score Spearman vs fp32 on the 1,500 STS-B
#      dev pairs (held out);
#   3. SciFact (BEIR): each test query's top --candidates documents from USE
#      Lite fp32 (a trained bi-encoder) reranked by the fp32 / int8 / int4
#      cross-encoder: nDCG@10 and score Spearman;
#   4. bi-encoder reranking with USE Lite: the same candidates reordered by
#      USE Lite int8 / int4 cosine vs fp32.
# Prints markdown rows; everything stays in WORKDIR (models and reports there
# are reused). On 2 shared cores step 3 takes about 70 minutes (the fp32
# reference 50 of them).
# usage: tests/bench/cross_encoder_table.sh [SQUINT] [GEN_FIXTURE] [SHARED_DATA] [WORKDIR] [MAX_SEQ] [CANDIDATES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SQ=${1:-$here/../../build/squint}
GEN=${2:-$here/../../build/tests/fixture/squint-gen-fixture}
data=${3:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
W=${4:-/tmp/squint-ce-table}
MAXSEQ=${5:-256}
CAND=${6:-100}
repo=$here/../..
export SQUINT_DATA=${SQUINT_DATA:-$repo/calib/data}
mkdir -p "$W"
cd "$W"
ce=ce-minilm6
[[ -d $ce ]] || "$GEN" --shape bge-small --layers 6 --outliers 2 --cross-encoder 1 \
    --vocab "$data/bge-small-en-v1.5/vocab.txt" "$ce" >/dev/null
printf 'weights:\n  type: int4-g128\n' >int4.yaml
[[ -f $ce.sqc ]] || "$SQ" calibrate "$ce" --samples 256 --max-seq "$MAXSEQ" --quiet -o "$ce.sqc"
[[ -f $ce-int8.sqm ]] || "$SQ" quantize "$ce" --calib "$ce.sqc" -o "$ce-int8.sqm" >/dev/null 2>&1
[[ -f $ce-int4.sqm ]] || "$SQ" quantize "$ce" --calib "$ce.sqc" --recipe int4.yaml -o "$ce-int4.sqm" >/dev/null 2>&1

echo "## 1. fp32 parity with PyTorch"
zstdcat "$repo/calib/data/qasper-pairs.jsonl.zst" | sed -n '700,999p' >oracle-pairs.jsonl
/usr/bin/python3 "$repo/tests/oracle/torch_cross_encoder.py" "$ce" oracle-pairs.jsonl \
    --squint "$SQ" --max-seq "$MAXSEQ" | tail -3

row() { /usr/bin/python3 - "$@" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
r = json.load(open(path)); m = r["metrics"]; t = m[r["task"]][list(m[r["task"]])[0]]
extra = " (retriever order %.4f)" % t["retriever"] if "retriever" in t else ""
print("| %s | %s | %d | %.5f | %.4f / %.4f | %.4f -> %.4f%s | %.0f s / %.0f s |" % (
    name, r["task"], r["pairs"], m["score_spearman"], m["max_abs_diff"], m["mean_abs_diff"],
    t["reference"], t["model"], extra, r["seconds"]["reference"], r["seconds"]["model"]))
PY
}
echo "## 2-4. pair scores vs fp32"
echo "| model | set | pairs | score Spearman | abs diff max / mean | task metric fp32 -> model | seconds fp32 / model |"
echo "|---|---|---|---|---|---|---|"
for q in int8 int4; do
    [[ -f stsb-$q.json ]] || "$SQ" embed-run "$ce-$q.sqm" --reference "$ce" \
        --input "$data/stsb-glue/dev.tsv" --max-seq "$MAXSEQ" --quiet --report "stsb-$q.json" >/dev/null
    row "cross-encoder $q" "stsb-$q.json"
done
use=$data/use-lite-tfjs
[[ -f use-int8.sqm ]] || "$SQ" quantize "$use" --recipe "$repo/recipes/use-lite.yaml" -o use-int8.sqm >/dev/null 2>&1
for q in ${SCIFACT_MODELS:-int8}; do   # int4 too: SCIFACT_MODELS="int8 int4" (another hour)
    [[ -f scifact-$q.json ]] || "$SQ" embed-run "$ce-$q.sqm" --reference "$ce" \
        --input "$data/scifact/beir-format" --retriever "$use" --candidates "$CAND" \
        --max-seq "$MAXSEQ" --quiet --report "scifact-$q.json" >/dev/null
    row "cross-encoder $q, USE Lite top-$CAND" "scifact-$q.json"
done
[[ -f use-rerank-int8.json ]] || "$SQ" embed-run use-int8.sqm --reference "$use" \
    --input "$data/scifact/beir-format" --retriever "$use" --candidates "$CAND" --quiet \
    --report use-rerank-int8.json >/dev/null
row "USE Lite int8 (bi-encoder cosine)" use-rerank-int8.json
