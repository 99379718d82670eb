#!/usr/bin/env bash
# Regenerates calib/data/qasper-pairs.jsonl.zst, the bundled calibration
# corpus of query/document pairs for cross-encoders, from the QASPER subset
# (CC-BY-4.0; see PROVENANCE.md here). Deterministic: the same inputs give the
# same JSONL bytes (sha256 in PROVENANCE.md). Not needed at build time.
#
# usage: calib/data/make-qasper-pairs.sh [QASPER_SUBSET_DIR]
#   default dir: $SQUINT_SHARED_DATA/qasper-subset, else ../shared/data/qasper-subset
#   next to the repository. Needs python3 (standard library) and zstd.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}/qasper-subset}
out=$here/qasper-pairs.jsonl.zst

(cd "$src" && sha256sum -c --quiet) <<'SUMS'
da8c44eab115a59d4cb92a041feb5bb75490d643e210aed6ba3d5cfae1fa0dd6  qasper_eval_qas.jsonl
SUMS

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

python3 - "$src" >"$tmp" <<'PY'
# Selection: every question (file order) with every evidence paragraph it
# cites (label 1; table/figure captions "FLOAT SELECTED: ..." left out), then
# one negative (label 0): the first evidence paragraph cited by the next
# question of the same paper that it does not cite itself, else the first of
# the next paper's. A cross-encoder sees related and unrelated pairs, as when
# it reranks retrieved candidates. Exact duplicate pairs are kept once.
import json, sys

src = sys.argv[1]
qas = [json.loads(l) for l in open(f"{src}/qasper_eval_qas.jsonl", encoding="utf-8") if l.strip()]

def prose(q):
    out = []
    for e in q["evidence"]:
        e = e.strip()
        if e and not e.startswith("FLOAT SELECTED:") and e not in out:
            out.append(e)
    return out

seen = set()
def emit(query, doc, label, pid):
    key = (query, doc)
    if key in seen:
        return
    seen.add(key)
    rec = {"query": query, "document": doc, "label": label, "paper_id": pid}
    sys.stdout.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")

for i, q in enumerate(qas):
    ev = prose(q)
    query = q["question"].strip()
    if not ev or not query:
        continue
    for e in ev:
        emit(query, e, 1, q["paper_id"])
    neg = None
    for other in qas[i + 1:] + qas[:i]:
        cand = [e for e in prose(other) if e not in ev]
        if not cand:
            continue
        if other["paper_id"] == q["paper_id"] or neg is None:
            neg = cand[0]
            if other["paper_id"] == q["paper_id"]:
                break
    if neg is not None:
        emit(query, neg, 0, q["paper_id"])
PY

echo "pairs: $(wc -l <"$tmp") (relevant $(grep -c '"label":1' "$tmp"), not $(grep -c '"label":0' "$tmp"))"
echo "jsonl sha256: $(sha256sum <"$tmp" | cut -d' ' -f1)  bytes: $(wc -c <"$tmp")"
zstd -q -f -19 --no-progress "$tmp" -o "$out"
chmod 0644 "$out"
echo "wrote $out ($(wc -c <"$out") bytes, $(zstd --version))"
