#!/bin/sh
# The device check for issue 5's hardware-bound items, as one short script
# for a lent server (the `device` tool): the CPU's SIMD flags, then
# tests/device/isa_check built with gcc alone (the kernel sources, no
# Debian dependencies) and run: every ISA the CPU has (AVX-VNNI,
# AVX512-VNNI, AMX) against scalar, then GEMM GOP/s side by side.
# About a minute on 16 cores. With $OUT set (the device tool) the log is
# also written to $OUT/isa_check.txt.
# usage: tests/device/run.sh [--quick] [--rounds N]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-gcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the checks' small shapes at 2+ threads too (libquant/cpu/par_threads.h would
# run most of them on one)
export SQUINT_THREAD_MIN_NS=0
log=${OUT:+$OUT/isa_check.txt}
{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
  echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
    grep -E '^(avx2|fma|avx512f|avx512bw|avx512_vnni|avx_vnni|amx_tile|amx_int8|amx_bf16)$' | tr '\n' ' ')"
  echo "compiler: $($cc --version | head -1)"
} | tee ${log:+"$log"}
src=$root/libquant
$cc -O2 -std=gnu11 -fopenmp -I"$src/cpu" -I"$src/kernels" -I"$root/formats" -I"$root/base" \
  "$root/tests/device/isa_check.c" "$src"/kernels/gemm_s8_*.c "$src/kernels/gemm_tiles.c" \
  "$src/cpu/par_threads.c" "$src/kernels/gemm_quantize.c" "$src/cpu/cpu_features.c" \
  "$src/kernels/pack.c" "$src/kernels/qweight.c" "$src/kernels/qround.c" \
  "$src/kernels/outlier_side.c" "$src/kernels/ops.c" "$src/kernels/qtype.c" \
  "$root/base/sq_error.c" -lm -o "$tmp/isa_check"
if [ -n "$log" ]; then
  "$tmp/isa_check" "$@" | tee -a "$log"
  exit "$(tail -1 "$log" | grep -q FAILED && echo 1 || echo 0)"
fi
exec "$tmp/isa_check" "$@"
