#!/usr/bin/env bash
# fp32 vs int8 vs int4-g128 on the bge-small shape, side by side in one run:
# `squint bench` on the fp32 checkpoint and on the two .sqm builds, alternated
# for several rounds (the machine is shared: only ratios within a run mean
# anything). Throughput at --batch x --seq, latency at 1 x 128.
#   bench_precisions.sh --squint BIN --gen BIN [--workdir DIR] [--threads 2]
#                       [--rounds 3] [--batch 32] [--seq 256] [--iters 3] [--torch]
# --torch adds PyTorch fp32 and PyTorch dynamic int8 (quantize_dynamic, onednn)
# throughput to the same rounds (tests/bench/torch_bench.py, $PYTHON or /usr/bin/python3).
set -euo pipefail
squint= gen= work=/tmp/squint-bench-prec threads=2 rounds=3 batch=32 seq=256 iters=3 torch=0
while [ $# -gt 0 ]; do
  case "$1" in
  --squint) squint=$2; shift 2 ;;
  --gen) gen=$2; shift 2 ;;
  --workdir) work=$2; shift 2 ;;
  --threads) threads=$2; shift 2 ;;
  --rounds) rounds=$2; shift 2 ;;
  --batch) batch=$2; shift 2 ;;
  --seq) seq=$2; shift 2 ;;
  --iters) iters=$2; shift 2 ;;
  --torch) torch=1; shift ;;
  *) echo "bench_precisions: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$squint" && -n "$gen" ]] || { echo "usage: bench_precisions.sh --squint BIN --gen BIN" >&2; exit 2; }
mkdir -p "$work"
shared="${SQUINT_SHARED_DATA:-$(dirname "$0")/../../../shared/data}"
vocab=()
[[ -f "$shared/bge-small-en-v1.5/vocab.txt" ]] && vocab=(--vocab "$shared/bge-small-en-v1.5/vocab.txt")
m="$work/bge-small"
[[ -f "$m/config.json" ]] || "$gen" "$m" --shape bge-small --outliers 4 "${vocab[@]}" >/dev/null
[[ -f "$work/m.sqc" ]] || "$squint" calibrate "$m" --samples 64 --max-seq 256 --quiet -o "$work/m.sqc" 2>/dev/null
printf 'weights:\n  type: int4-g128\n' > "$work/int4.yaml"
[[ -f "$work/int8.sqm" ]] || "$squint" quantize "$m" --calib "$work/m.sqc" -o "$work/int8.sqm" 2>/dev/null
[[ -f "$work/int4.sqm" ]] || "$squint" quantize "$m" --calib "$work/m.sqc" --recipe "$work/int4.yaml" -o "$work/int4.sqm" 2>/dev/null

declare -A tput lat
for r in $(seq 1 "$rounds"); do
  for p in fp32 int8 int4; do
    src=$m; [[ $p != fp32 ]] && src="$work/$p.sqm"
    out=$("$squint" bench "$src" --batch "$batch" --seq "$seq" --threads "$threads" --iters "$iters")
    t=$(sed -n 's/.* seq\/s=\([0-9.]*\).*/\1/p' <<<"$out")
    l=$(sed -n 's/.* latency_ms=\([0-9.]*\).*/\1/p' <<<"$out")
    gemm=$(sed -n 's/.*gemm=\([a-z0-9-]*\).*/\1/p' <<<"$out")
    tput[$p]+="$t "; lat[$p]+="$l "
    printf 'round %d  %-5s %8s seq/s  %8s ms  (%s)\n' "$r" "$p" "$t" "$l" "$gemm"
  done
  if [[ $torch -eq 1 ]]; then
    for p in torch torch-dynint8; do
      flag=(); [[ $p == torch-dynint8 ]] && flag=(--dynamic-int8)
      t=$(OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "${PYTHON:-/usr/bin/python3}" \
            "$(dirname "$0")/torch_bench.py" "$m" --batch "$batch" --seq "$seq" --threads "$threads" \
            --iters "$iters" "${flag[@]}" 2>/dev/null | sed -n 's/.* seq\/s=\([0-9.]*\).*/\1/p')
      tput[$p]+="$t "
      printf 'round %d  %-13s %8s seq/s\n' "$r" "$p" "$t"
    done
  fi
done
median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ft=$(median "${tput[fp32]}"); fl=$(median "${lat[fp32]}")
echo
echo "bge-small shape, batch $batch x $seq, $threads threads, medians of $rounds rounds"
printf '%-6s %12s %10s %14s %10s\n' precision "seq/s" "vs fp32" "latency ms" "vs fp32"
for p in fp32 int8 int4; do
  t=$(median "${tput[$p]}"); l=$(median "${lat[$p]}")
  awk -v p="$p" -v t="$t" -v l="$l" -v ft="$ft" -v fl="$fl" \
    'BEGIN { printf "%-6s %12s %9.2fx %14s %9.2fx\n", p, t, t / ft, l, fl / l }'
done
if [[ $torch -eq 1 ]]; then
  for p in torch torch-dynint8; do
    t=$(median "${tput[$p]}")
    awk -v p="$p" -v t="$t" -v ft="$ft" -v i8="$(median "${tput[int8]}")" \
      'BEGIN { printf "%-13s %8s seq/s  squint fp32 / this %.2fx  squint int8 / this %.2fx\n", p, t, ft / t, i8 / t }'
  done
fi
ls -l "$m/model.safetensors" "$work/int8.sqm" "$work/int4.sqm" | awk '{print $5, $NF}'
