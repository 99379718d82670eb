#!/bin/bash
# fp32 encoder throughput, squint vs PyTorch, on the bge-small shape:
#
#   bench_fp32_vs_torch.sh --squint BIN [--gen BIN | --model DIR] [--workdir DIR]
#       [--threads N] [--batch 32] [--seq 256] [--iters K] [--rounds R] [--python PY]
#
# Without --model a bge-small-shaped fixture is generated (real vocabulary
# when $SQUINT_SHARED_DATA has it). The two runtimes are run alternately,
# R rounds each, so drift in machine load hits both; every round is a fresh
# process: `squint bench MODEL --batch B --seq S --threads N --iters K`
# (parsed: `fp32 seq/s=<float>`) and tests/bench/torch_bench.py with
# torch.set_num_threads(N). OPENBLAS_NUM_THREADS / OMP_NUM_THREADS are set to N
# for both: Debian's torch calls the system OpenBLAS, which would otherwise
# use every core. Prints a side-by-side table and the median ratio.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
squint= gen= model= work="${TMPDIR:-/tmp}/squint-bench" threads=2 batch=32 seq=256 iters=3 rounds=3
py=/usr/bin/python3
die() { echo "bench_fp32_vs_torch: $*" >&2; exit 2; }
posint() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 expects a positive integer, got '$2'"; }
while [ $# -gt 0 ]; do
    case "$1" in
    --squint) squint=${2:?}; shift 2 ;;
    --gen) gen=${2:?}; shift 2 ;;
    --model) model=${2:?}; shift 2 ;;
    --workdir) work=${2:?}; shift 2 ;;
    --threads) posint "$1" "${2:-}"; threads=$2; shift 2 ;;
    --batch) posint "$1" "${2:-}"; batch=$2; shift 2 ;;
    --seq) posint "$1" "${2:-}"; seq=$2; shift 2 ;;
    --iters) posint "$1" "${2:-}"; iters=$2; shift 2 ;;
    --rounds) posint "$1" "${2:-}"; rounds=$2; shift 2 ;;
    --python) py=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1" ;;
    esac
done
[ -n "$squint" ] || die "--squint is required"
[ -n "$model" ] || [ -n "$gen" ] || die "give --model DIR or --gen BIN"
if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    echo "skipped: $py has no torch"
    exit 77
fi
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads

if [ -z "$model" ]; then
    model="$work/bge-small-fixture"
    args=(--shape bge-small --seed 1)
    vocab="${SQUINT_SHARED_DATA:-}/bge-small-en-v1.5/vocab.txt"
    [ -n "${SQUINT_SHARED_DATA:-}" ] && [ -f "$vocab" ] && args+=(--vocab "$vocab")
    mkdir -p "$work"
    "$gen" "$model" "${args[@]}"
fi

echo "== runtimes"
"$py" "$here/torch_bench.py" --info
echo "squint: $squint $("$squint" --version 2>/dev/null | head -1 || true)"
echo "workload: $model, batch $batch x seq $seq, $threads threads, $iters iterations per run, $rounds rounds"
echo

# Last `key=<float>` value in a command's output, or "FAIL".
seqps() {
    local key=$1 out
    shift
    if ! out=$("$@" 2>&1); then
        echo "$out" | tail -3 >&2
        echo FAIL
        return
    fi
    echo "$out" | sed -n "s|.*$key=\([0-9.eE+-]*\).*|\1|p" | tail -1 | grep . || echo FAIL
}

s_all=() t_all=()
printf '%-6s %14s %14s %10s\n' round "squint seq/s" "torch seq/s" ratio
for ((r = 1; r <= rounds; r++)); do
    s=$(seqps "fp32 seq/s" "$squint" bench "$model" --batch "$batch" --seq "$seq" \
        --threads "$threads" --iters "$iters")
    t=$(seqps "torch seq/s" "$py" "$here/torch_bench.py" "$model" --batch "$batch" \
        --seq "$seq" --threads "$threads" --iters "$iters" --warmup 1)
    ratio=$(awk -v s="$s" -v t="$t" 'BEGIN { if (s+0 > 0 && t+0 > 0) printf "%.2f", s/t; else print "-" }')
    printf '%-6s %14s %14s %10s\n' "$r" "$s" "$t" "$ratio"
    [ "$s" != FAIL ] && s_all+=("$s")
    [ "$t" != FAIL ] && t_all+=("$t")
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2 }'; }
ms=$(median "${s_all[@]+"${s_all[@]}"}")
mt=$(median "${t_all[@]+"${t_all[@]}"}")
ratio=$(awk -v s="$ms" -v t="$mt" 'BEGIN { if (s+0 > 0 && t+0 > 0) printf "%.2f", s/t; else print "-" }')
printf '%-6s %14s %14s %10s\n' median "$ms" "$mt" "$ratio"
[ "${#s_all[@]}" -eq "$rounds" ] && [ "${#t_all[@]}" -eq "$rounds" ] || exit 1
