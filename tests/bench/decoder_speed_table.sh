#!/usr/bin/env bash
# The decoder speed table (docs/decoders.md): TTFT and TPOT (ms) and peak
# RSS of fp32, int8 SmoothQuant, int4-g128 (per-token int8 activations) and
# assisted generation (generate --draft, K = 4), at 1 thread, and int8 with
# its classifier left f32 (what the int8 lm head buys); the runs
# alternate between the rows, REPS rounds, medians; ratios against fp32 from
# the same run.
#   tests/bench/decoder_speed_table.sh SQUINT MODEL CORPUS [DRAFT_MODEL] [REPS]
# MODEL: a llama2.c checkpoint or an HF Llama folder; CORPUS: calibration
# text (one document per line). DRAFT_MODEL (optional, "" for none): a
# smaller model with MODEL's tokenizer (e.g. gen_llama_fixture.py --layers 2
# of the same shape), quantized int8 with the same recipe as its own row.
# Needs GNU time (/usr/bin/time) for the RSS.
set -eu
S=$1 M=$2 C=$3 DM=${4:-} REPS=${5:-5}
# Absolute paths: the runs happen in a temporary folder.
S=$(realpath "$S") M=$(realpath "$M") C=$(realpath "$C")
[ -z "$DM" ] || DM=$(realpath "$DM")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
R=$(cd "$(dirname "$0")/../../recipes" && pwd)
cp "$C" "$W/calib.txt"
cd "$W"
q() { "$S" quantize "$1" --calib "$2" --recipe "$3" -o "$4" --threads 2 --json "${@:5}" > /dev/null 2>&1; }
# The int8 recipe without its classifier section: the lm head stays f32.
sed '/^classifier:/,$d' "$R/stories260K-int8.yaml" > int8-c32.yaml
"$S" calibrate "$M" --corpus calib.txt --samples 0 --window --threads 2 --quiet -o s.sqc 2>/dev/null
q "$M" s.sqc "$R/stories260K-int8.yaml" int8.sqm
q "$M" s.sqc int8-c32.yaml int8-c32.sqm
q "$M" s.sqc "$R/stories260K-int4.yaml" int4.sqm --dynamic-acts
set -- "fp32|$M|" "int8|int8.sqm|" "int8, f32 classifier|int8-c32.sqm|" "int4-g128|int4.sqm|" \
       "fp32 + int8 draft|$M|int8.sqm" "int8 + int4 draft|int8.sqm|int4.sqm"
if [ -n "$DM" ]; then
  "$S" calibrate "$DM" --corpus calib.txt --samples 0 --window --threads 2 --quiet -o d.sqc 2>/dev/null
  q "$DM" d.sqc "$R/stories260K-int8.yaml" d8.sqm
  set -- "$@" "int8 + small int8 draft|int8.sqm|d8.sqm"
fi
P="Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
i=0
for r in $(seq "$REPS"); do
  i=0
  for e in "$@"; do
    i=$((i + 1))
    f=$(echo "$e" | cut -d'|' -f2) d=$(echo "$e" | cut -d'|' -f3)
    set +e
    if [ -n "$d" ]; then
      /usr/bin/time -f "%M" -o rss "$S" generate "$f" --draft "$d" --draft-tokens 4 --prompt "$P" \
        --max-tokens 128 --threads 1 2> err > /dev/null
    else
      /usr/bin/time -f "%M" -o rss "$S" generate "$f" --prompt "$P" --max-tokens 128 --threads 1 2> err > /dev/null
    fi
    set -e
    sed -n 's/.*TTFT \([0-9.]*\) ms, \([0-9.]*\) ms per output.*/\1 \2/p' err >> "$i.time"
    sed -n 's/.*(acceptance \([0-9.]*\)%), \([0-9.]*\) tokens per check.*/\1% acceptance, \2 tokens per check/p' err > "$i.acc"
    tail -n 1 rss >> "$i.rss"
  done
done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ft=$(cut -d' ' -f1 1.time | med) fo=$(cut -d' ' -f2 1.time | med)
printf '| model | TTFT ms | TPOT ms | TTFT x fp32 | TPOT x fp32 | peak RSS MiB | assisted |\n|---|---|---|---|---|---|---|\n'
i=0
for e in "$@"; do
  i=$((i + 1))
  n=$(echo "$e" | cut -d'|' -f1)
  t=$(cut -d' ' -f1 "$i.time" | med) o=$(cut -d' ' -f2 "$i.time" | med) rss=$(med < "$i.rss")
  acc=$(cat "$i.acc")
  awk -v n="$n" -v t="$t" -v o="$o" -v ft="$ft" -v fo="$fo" -v r="$rss" -v a="${acc:--}" \
    'BEGIN {printf "| %s | %.3f | %.4f | %.2f | %.2f | %.1f | %s |\n", n, t, o, ft/t, fo/o, r/1024, a}'
done
