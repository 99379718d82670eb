#!/usr/bin/env bash
# The worst-case accuracy table of docs/evidence.md "Worst-case accuracy": fixtures
# that behave like trained encoders (squint-gen-fixture --outliers 2 at the
# bge-small and bge-base shapes, the real bge vocabulary), calibrated on the
# bundled QASPER corpus, evaluated out of domain on the 3,000 STS-B dev
# sentences (1,500 pairs: Spearman) and SciFact (5,183 documents + 300 test
# queries: nDCG@10), per recipe:
#   before    squint before the fixes: observer.guard clip, outliers off
#   guard     the row guard alone (outliers off)
#   outliers  outlier channels in fp32 alone (guard clip)
#   default   both (= the shipped recipe of the shape = bert-generic, checked
#             tensor by tensor with `squint diff --json`)
#   int4      the default with int4-g128 weights
# fp32 reference embeddings are computed once per fixture and text (embed-run
# --output) and reused (--reference E.npy). Prints one markdown table;
# reports stay in WORKDIR (existing reports and models there are reused).
# SciFact embeds 5,483 long texts per variant: on 2 cores about 5 min
# (bge-small) and 15 min (bge-base) each, the bge-base fp32 reference ~50 min.
# usage: tests/bench/worst_case_table.sh [SQUINT] [GEN_FIXTURE] [SHARED_DATA] [WORKDIR] [SHAPES] [SETS] [VARIANTS]
#   SHAPES default "bge-small bge-base", SETS default "stsb scifact",
#   VARIANTS default "before guard outliers default int4" (SciFact: only those
#   given in SCIFACT_VARIANTS, default "before default")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SQ=${1:-$here/../../build/squint}
GEN=${2:-$here/../../build/tests/fixture/squint-gen-fixture}
data=${3:-${SQUINT_SHARED_DATA:-$here/../../../shared/data}}
W=${4:-/tmp/squint-worst-table}
shapes=${5:-bge-small bge-base}
sets=${6:-stsb scifact}
variants=${7:-before guard outliers default int4}
scifact_variants=${SCIFACT_VARIANTS:-before default}
recipes=$here/../../recipes
mkdir -p "$W"
cd "$W"
input_of() { case $1 in stsb) echo "$data/stsb-glue/original/sts-dev.tsv" ;; scifact) echo "$data/scifact/beir-format" ;; esac; }
printf 'observer:\n  guard: clip\noutliers:\n  enabled: false\n' >before.yaml
printf 'outliers:\n  enabled: false\n' >guard.yaml
printf 'observer:\n  guard: clip\n' >outliers.yaml
printf 'weights:\n  type: int4-g128\n' >int4.yaml
printf 'version: 1\n' >default.yaml
# The shipped recipe of the shape and bert-generic have the default's
# observer, SmoothQuant and weight settings (they add shape checks and
# gates): their tensors must be the default's, which `squint diff --json`
# proves, so one row stands for the three.
for shape in $shapes; do
  m=fx-$shape
  [[ -f $m/config.json ]] || "$GEN" $m --shape $shape --vocab "$data/$shape-en-v1.5/vocab.txt" --outliers 2 >/dev/null
  [[ -f $m.sqc ]] || "$SQ" calibrate $m --quiet -o $m.sqc
  cp "$recipes/$shape-en-v1.5.yaml" shipped-$shape.yaml
  cp "$recipes/bert-generic.yaml" generic.yaml
  for v in $variants shipped-$shape generic; do
    [[ -f $m.$v.sqm ]] || "$SQ" quantize $m --calib $m.sqc --recipe $v.yaml -o $m.$v.sqm >$m.$v.quantize.log 2>&1
  done
  for v in shipped-$shape generic; do
    "$SQ" diff $m.default.sqm $m.$v.sqm --json >$m.$v.diff.json || true
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['tensors_differ'] == 0 and not d['only_in_a'] and not d['only_in_b'] else 1)" $m.$v.diff.json ||
      echo "worst_case_table: $m.$v.sqm has tensors that differ from the default's" >&2
  done
done
for set in $sets; do
  for shape in $shapes; do
    m=fx-$shape
    in=$(input_of $set)
    [[ -f $m.$set.ref.npy ]] || "$SQ" embed-run $m --input "$in" --output $m.$set.ref.npy --quiet >/dev/null
    vs=$variants
    [[ $set == scifact ]] && vs=$scifact_variants
    for v in $vs; do
      [[ -f $m.$v.$set.json ]] || "$SQ" embed-run $m.$v.sqm --input "$in" --reference $m.$set.ref.npy \
        --report $m.$v.$set.json --quiet >/dev/null || true # gate results do not stop the table
    done
  done
done
/usr/bin/python3 - "$W" $shapes -- $sets -- $variants <<'PY'
import json, os, sys
W = sys.argv[1]; i = sys.argv.index("--"); j = sys.argv.index("--", i + 1)
shapes = sys.argv[2:i]; sets = sys.argv[i + 1:j]; variants = sys.argv[j + 1:]
print("| fixture | recipe | text | cos mean | cos min | p0.1 | < 0.98 | centred mean | centred min | beyond range (max over linears) | task drop |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
names = {"before": "before: guard clip, no outlier channels",
         "guard": "row guard only",
         "outliers": "outlier channels only (guard clip)",
         "default": "default = recipes/{shape}-en-v1.5.yaml = bert-generic (guard row + outlier channels)",
         "int4": "default with int4-g128 weights"}
for shape in shapes:
    for v in variants:
        for s in sets:
            f = os.path.join(W, f"fx-{shape}.{v}.{s}.json")
            if not os.path.exists(f):
                continue
            r = json.load(open(f)); c = r["metrics"]["cosine"]; n = r["counts"]["texts"]
            beyond = max(x["fraction"] or 0 for x in r["metrics"].get("clip_exceed", [{"fraction": 0}]))
            t = r["metrics"].get(s, {})
            drop = ""
            if "spearman" in t: drop = f"Spearman {100 * t['spearman']['reference']:.2f} -> {100 * t['spearman']['model']:.2f}"
            if "ndcg10" in t: drop = f"nDCG@10 {100 * t['ndcg10']['reference']:.2f} -> {100 * t['ndcg10']['model']:.2f}"
            label = names[v].format(shape=shape)
            text = {"stsb": f"STS-B dev ({n})", "scifact": f"SciFact ({n})"}[s]
            print(f"| {shape} | {label} | {text} | {c['mean']:.5f} | {c['min']:.4f} | {c['p001']:.4f} | {c['below']['0.98']} | "
                  f"{c['centred']['mean']:.4f} | {c['centred']['min']:.3f} | {100 * beyond:.3f}% | {drop} |")
PY
