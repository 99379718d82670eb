#!/usr/bin/env bash
# One prepared device call for a lent server CPU (the `device` tool): the
# AMX/VNNI kernel check (run.sh), then squint end to end on the bge-small
# shape (fp32 / int8 / int4, PyTorch fp32 and dynamic int8 side by side) at 1
# thread and at all threads, and int8 with every SIMD ISA the CPU has.
# The server is bare (none of squint's Debian libraries), so squint and its
# shared libraries travel prebuilt from the build machine as
# .devbundle/bundle.tar.xz (see tests/device/README.md for how to make it).
#   run(command="bash tests/device/server_bench.sh", carry=[".devbundle"], timeout_s=580)
# (the steps' timeouts add up to about 560 s; each step logs what it got)
# Logs land in $OUT (isa_check.txt, server_bench.txt).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/squint-server-bench}
mkdir -p "$out"
log=$out/server_bench.txt
say() { echo "$*" | tee -a "$log"; }
: >"$log"
say "date: $(date -u +%FT%TZ)"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs"
say "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
  grep -E '^(avx2|avx512f|avx512bw|avx512_vnni|avx512_bf16|avx_vnni|amx_tile|amx_int8|amx_bf16)$' | tr '\n' ' ')"
say "kernel: $(uname -r)"

# 1. kernels: every ISA vs scalar, GEMM GOP/s (gcc alone, no dependencies)
timeout 120 sh "$root/tests/device/run.sh" --rounds 2 >/dev/null 2>&1
say "isa_check rc=$? (log: isa_check.txt)"
tail -n 30 "$out/isa_check.txt" 2>/dev/null | tee -a "$log"

# 2. end to end, from the prebuilt bundle
b=/tmp/squint-bundle
mkdir -p "$b"
if ! tar -C "$b" -xJf "$root/.devbundle/bundle.tar.xz"; then
  say "no bundle: end-to-end part skipped"
  exit 0
fi
export LD_LIBRARY_PATH=$b/lib
"$b/squint" --version 2>&1 | head -1 | tee -a "$log"
py=$(command -v python3)
say "python: $py $($py -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1)"
work=/tmp/squint-sb
all=$(nproc)
bench() { # threads batch rounds seconds
  PYTHON=$py timeout "$4" bash "$root/tests/bench/bench_precisions.sh" --squint "$b/squint" \
    --gen "$b/squint-gen-fixture" --workdir "$work" --threads "$1" --batch "$2" --seq 256 \
    --rounds "$3" --iters 2 --torch 2>&1 | tee -a "$log"
}
say "== 1 thread, batch 8 x 256"
bench 1 8 1 120
say "== $all threads, batch 32 x 256"
bench "$all" 32 2 150
say "== int8 per ISA, 1 thread, batch 8 x 256, latency 1 x 128"
for isa in avx2 avxvnni avx512vnni amx; do
  r=$(SQUINT_ISA=$isa timeout 30 "$b/squint" bench "$work/int8.sqm" --batch 8 --seq 256 \
    --threads 1 --iters 2 2>&1 | grep -E 'seq/s|latency|error' | tr '\n' ' ')
  say "$isa: $r"
done
say "== int8 per-op profile, $all threads, amx if present"
timeout 45 "$b/squint" bench "$work/int8.sqm" --batch 32 --seq 256 --threads "$all" --iters 2 \
  --profile 2>&1 | tail -n 40 | tee -a "$log"
exit 0
