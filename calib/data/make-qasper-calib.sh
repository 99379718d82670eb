#!/usr/bin/env bash
# Regenerates calib/data/qasper-calib.jsonl.zst, squint's bundled calibration
# corpus, from the QASPER subset (CC-BY-4.0; see PROVENANCE.md here).
# Deterministic: the same inputs give the same JSONL bytes (its sha256 is
# recorded in PROVENANCE.md). Not needed at build time.
#
# usage: calib/data/make-qasper-calib.sh [QASPER_SUBSET_DIR]
#   default dir: $SQUINT_SHARED_DATA/qasper-subset, else ../shared/data/qasper-subset
#   next to the repository. Needs python3 (standard library) and zstd.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}/qasper-subset}
out=$here/qasper-calib.jsonl.zst

# Refuse inputs other than the ones PROVENANCE.md describes.
(cd "$src" && sha256sum -c --quiet) <<'SUMS'
8c65aedc6270d7a48100f7de55fd39d67e93c221b10407a1e916acf46c9a17a5  papers.jsonl
da8c44eab115a59d4cb92a041feb5bb75490d643e210aed6ba3d5cfae1fa0dd6  qasper_eval_qas.jsonl
SUMS

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

python3 - "$src" >"$tmp" <<'PY'
# Selection: for each paper in papers.jsonl order, its abstract, then its
# questions (qasper_eval_qas.jsonl order), then the evidence paragraphs its
# questions cite (first-cited order). Evidence that is a table/figure caption
# ("FLOAT SELECTED: ...") is left out: captions are not running prose. Exact
# duplicate texts are kept once (first occurrence).
import json, sys

src = sys.argv[1]
papers = [json.loads(l) for l in open(f"{src}/papers.jsonl", encoding="utf-8") if l.strip()]
qas = [json.loads(l) for l in open(f"{src}/qasper_eval_qas.jsonl", encoding="utf-8") if l.strip()]

seen = set()
def emit(text, source, paper_id):
    text = text.strip()
    if not text or text in seen:
        return
    seen.add(text)
    rec = {"text": text, "source": source, "paper_id": paper_id}
    sys.stdout.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")

for p in papers:
    pid = p["paper_id"]
    emit(p["abstract"], "abstract", pid)
    mine = [q for q in qas if q["paper_id"] == pid]
    for q in mine:
        emit(q["question"], "question", pid)
    for q in mine:
        for e in q["evidence"]:
            if not e.startswith("FLOAT SELECTED:"):
                emit(e, "evidence", pid)
PY

echo "records: $(wc -l <"$tmp")"
for s in abstract question evidence; do
    echo "  $s: $(grep -c "\"source\":\"$s\"" "$tmp")"
done
echo "jsonl sha256: $(sha256sum <"$tmp" | cut -d' ' -f1)  bytes: $(wc -c <"$tmp")"
zstd -q -f -19 --no-progress "$tmp" -o "$out"
chmod 0644 "$out"
echo "wrote $out ($(wc -c <"$out") bytes, $(zstd --version))"
