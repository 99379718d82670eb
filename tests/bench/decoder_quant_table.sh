#!/bin/sh
# The decoder quantization table (docs/decoders.md): stories260K fp32 vs
# int8 SmoothQuant vs int4-g128, perplexity on held-out TinyStories text,
# greedy agreement with fp32 over 256 tokens from 10 prompts, TTFT / TPOT at
# 1 thread (runs alternate between the models; medians) and peak RSS.
#   tests/bench/decoder_quant_table.sh SQUINT DATA_DIR [REPS]
# DATA_DIR holds stories260K/ and tinystories-sample/. Calibration: the first
# 9 stories (lines) of TinyStories-valid-head.txt; held out: the other 10.
set -eu
S=$1 D=$2 REPS=${3:-5}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
M=$D/stories260K/stories260K.bin
T=$D/tinystories-sample/TinyStories-valid-head.txt
head -n 9 "$T" > "$W/calib.txt"
tail -n +10 "$T" > "$W/heldout.txt"
R=$(dirname "$0")/../../recipes
"$S" calibrate "$M" --corpus "$W/calib.txt" --samples 0 --window --threads 1 --quiet -o "$W/s.sqc" 2>/dev/null
"$S" quantize "$M" --calib "$W/s.sqc" --recipe "$R/stories260K-int8.yaml" -o "$W/int8.sqm" --json >/dev/null
"$S" quantize "$M" --calib "$W/s.sqc" --recipe "$R/stories260K-int4.yaml" --dynamic-acts -o "$W/int4.sqm" --json >/dev/null
"$S" quantize "$M" --calib "$W/s.sqc" --recipe "$R/stories260K-int4.yaml" -o "$W/int4s.sqm" --json >/dev/null
set -- fp32:"$M" int8:"$W/int8.sqm" int4:"$W/int4.sqm" int4-static-acts:"$W/int4s.sqm"
for e in "$@"; do
  n=${e%%:*} f=${e#*:}
  "$S" perplexity "$f" --input "$W/heldout.txt" --docs lines --threads 1 --json > "$W/$n.ppl.json" 2>/dev/null
  : > "$W/$n.ids"
  i=0
  while IFS= read -r line; do
    i=$((i + 1))
    p=$(printf '%s' "$line" | cut -d' ' -f1-4)
    "$S" generate "$f" --prompt "$p" --max-tokens 256 --ids --threads 1 --quiet 2>/dev/null | tr ' ' '\n' | grep -v '^$' | awk -v i="$i" '{print i "." NR, $1}' >> "$W/$n.ids"
  done < "$W/heldout.txt"
done
# timing: alternate the models, REPS rounds
for r in $(seq "$REPS"); do
  for e in "$@"; do
    n=${e%%:*} f=${e#*:}
    /usr/bin/time -f "%M" -o "$W/rss" "$S" generate "$f" --prompt "Once upon a time, there was a little girl named Lily. She loved to play outside in the park." \
      --max-tokens 200 --threads 1 2>&1 >/dev/null | sed -n 's/.*TTFT \([0-9.]*\) ms, \([0-9.]*\) ms per output.*/\1 \2/p' >> "$W/$n.time"
    cat "$W/rss" >> "$W/$n.rss"
  done
done
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
f32ttft=$(cut -d' ' -f1 "$W/fp32.time" | med) f32tpot=$(cut -d' ' -f2 "$W/fp32.time" | med)
f32ppl=$(sed -n 's/.*"perplexity": *\([0-9.]*\).*/\1/p' "$W/fp32.ppl.json")
printf '| model | ppl (held out) | vs fp32 | greedy agreement (same position), mean first divergence | TTFT ms | TPOT ms | TTFT x | TPOT x | peak RSS KiB |\n|---|---|---|---|---|---|---|---|---|\n'
for e in "$@"; do
  n=${e%%:*}
  ppl=$(sed -n 's/.*"perplexity": *\([0-9.]*\).*/\1/p' "$W/$n.ppl.json")
  # per prompt and position: the share of fp32's tokens the model reproduces
  # at the same position, and the positions before the first difference
  agree=$(awk 'NR == FNR {a[$1] = $2; next} ($1 in a) && a[$1] == $2 {s++}
               END {printf "%.1f%% (%d/%d)", 100 * s / length(a), s, length(a)}' "$W/fp32.ids" "$W/$n.ids")
  first=$(awk 'NR == FNR {a[$1] = $2; next} {split($1, k, "."); if (!(k[1] in d) && (!($1 in a) || a[$1] != $2)) d[k[1]] = k[2] - 1}
               END {for (p = 1; p <= 10; p++) t += (p in d) ? d[p] : 256; printf "%.0f", t / 10}' "$W/fp32.ids" "$W/$n.ids")
  agree="$agree, first diff at $first"
  ttft=$(cut -d' ' -f1 "$W/$n.time" | med) tpot=$(cut -d' ' -f2 "$W/$n.time" | med) rss=$(med < "$W/$n.rss")
  awk -v n="$n" -v p="$ppl" -v fp="$f32ppl" -v a="$agree" -v t="$ttft" -v o="$tpot" -v ft="$f32ttft" -v fo="$f32tpot" -v r="$rss" \
    'BEGIN {printf "| %s | %.4f | %+.2f%% | %s | %.3f | %.4f | %.2f | %.2f | %s |\n", n, p, 100*(p/fp-1), a, t, o, ft/t, fo/o, r}'
done
