#!/usr/bin/env bash
# Calibration at the bge-small shape: 100 samples of 512 tokens, 2 threads,
# timed with /usr/bin/time -v (samples/s and peak RSS).
#   calib_bge_small.sh SQUINT GEN_FIXTURE [WORKDIR]
# The samples are long texts made by joining each QASPER paper's abstract,
# questions and evidence paragraphs from the bundled corpus, so that every
# sample fills 512 tokens.
set -euo pipefail
SQ=$1
GEN=$2
W=${3:-/tmp/squint-calib-bench}
here=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$W"
vocab=()
[[ -f "${SQUINT_SHARED_DATA:-../shared/data}/bge-small-en-v1.5/vocab.txt" ]] &&
  vocab=(--vocab "${SQUINT_SHARED_DATA:-../shared/data}/bge-small-en-v1.5/vocab.txt")
[[ -f "$W/model/config.json" ]] || "$GEN" "$W/model" --shape bge-small --outliers 4 "${vocab[@]}"
zstd -dc "$here/calib/data/qasper-calib.jsonl.zst" | python3 -c '
import json, sys
papers = {}
for line in sys.stdin:
    r = json.loads(line)
    papers.setdefault(r["paper_id"], []).append(r["text"])
for pid in sorted(papers):
    print(json.dumps({"text": " ".join(papers[pid])}))
' > "$W/long.jsonl"
/usr/bin/time -v "$SQ" calibrate "$W/model" --corpus "$W/long.jsonl" --samples 100 --max-seq 512 \
  --batch 8 --threads 2 --quiet -o "$W/bge-small.sqc" 2> "$W/time.log" || { cat "$W/time.log"; exit 1; }
grep -E "squint calibrate:|Elapsed|Maximum resident" "$W/time.log"
