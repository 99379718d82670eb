#!/usr/bin/env bash
# SST-2 dev accuracy of a squint classification head (SetFit's recipe: a
# frozen sentence-embedding body + logistic regression) on USE Lite, fp32
# vs int8, with the head trained on the full SST-2 train set (67k) and on 64
# examples per class (seed 0). Not part of the test suite (minutes):
#   sst2_head_table.sh --squint BIN [--data DIR] [--workdir DIR] [--threads N]
# DIR (default $SQUINT_SHARED_DATA or /work/shared/data) holds sst2-glue/
# {train,dev}.tsv and use-lite-tfjs/. Prints a markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
squint= data=${SQUINT_SHARED_DATA:-/work/shared/data} work= threads=
py=/usr/bin/python3
die() { echo "sst2_head_table: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
  --squint) squint=$2; shift 2 ;;
  --data) data=$2; shift 2 ;;
  --workdir) work=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  *) die "unknown option $1" ;;
  esac
done
[[ -x $squint ]] || die "--squint BIN is required"
sst=$data/sst2-glue use=$data/use-lite-tfjs
[[ -f $sst/train.tsv && -f $sst/dev.tsv && -d $use ]] || die "needs $sst/{train,dev}.tsv and $use"
[[ -n $work ]] || work=$(mktemp -d /tmp/squint-sst2-head-XXXXXX)
mkdir -p "$work"
targs=()
[[ -n $threads ]] && targs=(--threads "$threads")

# dev texts, one per line, and their labels
$py - "$sst/dev.tsv" "$work/dev.txt" "$work/dev.labels" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE))
open(sys.argv[2], "w", encoding="utf-8").write("".join(r["sentence"].replace("\n", " ") + "\n" for r in rows))
open(sys.argv[3], "w").write("".join(r["label"] + "\n" for r in rows))
PY

if [[ ! -f $work/use.sqm ]]; then
  "$squint" calibrate "$use" --samples 256 --quiet -o "$work/use.sqc"
  "$squint" quantize "$use" --calib "$work/use.sqc" --recipe "$here/../../recipes/use-lite.yaml" \
    -o "$work/use.sqm" >/dev/null 2>&1
fi

acc() { # HEAD MODEL -> dev accuracy
  "$squint" classify "$2" --head "$1" --input "$work/dev.txt" --quiet "${targs[@]}" >"$work/pred.jsonl"
  $py - "$work/pred.jsonl" "$work/dev.labels" <<'PY'
import json, sys
pred = [json.loads(l)["label"] for l in open(sys.argv[1])]
gold = open(sys.argv[2]).read().split()
assert len(pred) == len(gold)
print(f"{sum(p == g for p, g in zip(pred, gold)) / len(gold):.4f}")
PY
}

echo "| model | head trained on | rows | train acc | dev acc (872) | train-head s |"
echo "|---|---|---|---|---|---|"
for m in fp32 int8; do
  M=$use
  [[ $m == int8 ]] && M=$work/use.sqm
  for setup in full 64; do
    extra=()
    [[ $setup == 64 ]] && extra=(--per-class 64 --seed 0)
    t0=$(date +%s.%N)
    "$squint" train-head "$M" --train "$sst/train.tsv" "${extra[@]}" --quiet "${targs[@]}" \
      -o "$work/head-$m-$setup.json"
    t1=$(date +%s.%N)
    read -r rows tacc < <($py -c 'import json,sys; t=json.load(open(sys.argv[1]))["training"]; print(t["rows_used"], "%.4f" % t["train_accuracy"])' "$work/head-$m-$setup.json")
    label="full train set"
    [[ $setup == 64 ]] && label="64 per class (seed 0)"
    printf '| USE Lite %s | %s | %s | %s | %s | %.0f |\n' "$m" "$label" "$rows" "$tacc" \
      "$(acc "$work/head-$m-$setup.json" "$M")" "$(echo "$t1 - $t0" | bc)"
  done
done
