#!/usr/bin/env bash
# SST-2 dev accuracy of a squint classification head (SetFit's recipe: a
# frozen sentence-embedding body + logistic regression) on USE Lite, fp32
# vs int8 vs int4-g128 (recipes/use-lite.yaml with weights.type int4-g128),
# with the head trained on the full SST-2 train set (67k) and on 64 examples
# per class (seed 0), and classify throughput: the 872 dev sentences at one
# thread, the models' runs alternated (fp32, int8, int4, fp32, ...) so load
# from elsewhere hits them alike; the median of --runs. Not part of the test
# suite (minutes):
#   sst2_head_table.sh --squint BIN [--data DIR] [--workdir DIR] [--threads N]
#                      [--models "fp32 int8 int4"] [--setups "full 64"] [--runs 3]
# DIR (default $SQUINT_SHARED_DATA or /work/shared/data) holds sst2-glue/
# {train,dev}.tsv and use-lite-tfjs/. Prints a markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
squint= data=${SQUINT_SHARED_DATA:-/work/shared/data} work= threads=
models="fp32 int8 int4" setups="full 64" runs=3
py=/usr/bin/python3
die() { echo "sst2_head_table: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
  --squint) squint=$2; shift 2 ;;
  --data) data=$2; shift 2 ;;
  --workdir) work=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --models) models=$2; shift 2 ;;
  --setups) setups=$2; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
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

[[ -f $work/use.sqc ]] || "$squint" calibrate "$use" --samples 256 --quiet -o "$work/use.sqc"
if [[ ! -f $work/use.sqm ]]; then
  "$squint" quantize "$use" --calib "$work/use.sqc" --recipe "$here/../../recipes/use-lite.yaml" \
    -o "$work/use.sqm" >/dev/null 2>&1
fi
if [[ ! -f $work/use-int4.sqm ]]; then
  sed 's/^  type: int8$/  type: int4-g128/; s/^name: use-lite$/name: use-lite-int4/' \
    "$here/../../recipes/use-lite.yaml" >"$work/use-lite-int4.yaml"
  grep -q 'type: int4-g128' "$work/use-lite-int4.yaml" || die "could not derive the int4 recipe"
  "$squint" quantize "$use" --calib "$work/use.sqc" --recipe "$work/use-lite-int4.yaml" \
    -o "$work/use-int4.sqm" >/dev/null 2>&1
fi
model_of() { case $1 in fp32) echo "$use" ;; int8) echo "$work/use.sqm" ;; int4) echo "$work/use-int4.sqm" ;; esac; }
label_of() { case $1 in int4) echo int4-g128 ;; *) echo "$1" ;; esac; }

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

# classify throughput: --runs rounds, each model once per round, one thread
declare -A secs
for ((r = 0; r < runs; r++)); do
  for m in $models; do
    M=$(model_of "$m")
    [[ -f $work/head-$m-64.json ]] ||
      "$squint" train-head "$M" --train "$sst/train.tsv" --per-class 64 --seed 0 --quiet \
        -o "$work/head-$m-64.json"
    t0=$(date +%s.%N)
    "$squint" classify "$M" --head "$work/head-$m-64.json" --input "$work/dev.txt" --quiet \
      --threads 1 >/dev/null
    t1=$(date +%s.%N)
    secs[$m]+="$(echo "$t1 - $t0" | bc) "
  done
done
declare -A rate
for m in $models; do
  med=$(printf '%s\n' ${secs[$m]} | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  rate[$m]=$(echo "scale=1; 872 / $med" | bc)
  echo "classify $m: ${secs[$m]}s (median $med s, ${rate[$m]} sentences/s)" >&2
done

echo "| model | head trained on | rows | train acc | dev acc (872) | train-head s | classify /s, 1 thread |"
echo "|---|---|---|---|---|---|---|"
for m in $models; do
  M=$(model_of "$m")
  for setup in $setups; do
    extra=()
    [[ $setup == 64 ]] && extra=(--per-class 64 --seed 0)
    t0=$(date +%s.%N)
    "$squint" train-head "$M" --train "$sst/train.tsv" "${extra[@]}" --quiet "${targs[@]}" \
      -o "$work/head-$m-$setup.json"
    t1=$(date +%s.%N)
    read -r rows tacc < <($py -c 'import json,sys; t=json.load(open(sys.argv[1]))["training"]; print(t["rows_used"], "%.4f" % t["train_accuracy"])' "$work/head-$m-$setup.json")
    label="full train set"
    [[ $setup == 64 ]] && label="64 per class (seed 0)"
    printf '| USE Lite %s | %s | %s | %s | %s | %.0f | %s |\n' "$(label_of "$m")" "$label" "$rows" \
      "$tacc" "$(acc "$work/head-$m-$setup.json" "$M")" "$(echo "$t1 - $t0" | bc)" "${rate[$m]}"
  done
done
