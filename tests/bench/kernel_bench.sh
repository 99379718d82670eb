#!/usr/bin/env bash
# GEMM kernel benchmark on the bge-small/base linear shapes: squint int8
# (best ISA and avx2), squint int4, OpenBLAS sgemm and oneDNN u8s8s32 matmul,
# interleaved in one process (see tests/bench/kernel_bench.c).
#   kernel_bench.sh [--build DIR] [--no-install] [kernel_bench options...]
# e.g. kernel_bench.sh --threads 2 --reps 7 --m 128,8192 --model all
# Installs libdnnl-dev with apt-get when its header is missing (needs root;
# skipped with --no-install), then reconfigures the build so that the bench
# links oneDNN, builds kernel_bench and runs it.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="$src/build" install=1 args=()
while [ $# -gt 0 ]; do
  case "$1" in
  --build) build=$2; shift 2 ;;
  --no-install) install=0; shift ;;
  *) args+=("$1"); shift ;;
  esac
done
if [[ ! -f /usr/include/oneapi/dnnl/dnnl.h && $install == 1 ]]; then
  echo "kernel_bench.sh: installing libdnnl-dev" >&2
  sudo=""
  [[ $(id -u) == 0 ]] || sudo=sudo
  if ! { $sudo apt-get install -y libdnnl-dev >/dev/null ||
         { $sudo apt-get update >/dev/null && $sudo apt-get install -y libdnnl-dev >/dev/null; }; }; then
    echo "kernel_bench.sh: could not install libdnnl-dev; running without oneDNN" >&2
  fi
fi
if [[ ! -d "$build" ]]; then
  meson setup "$build" "$src" >/dev/null
elif [[ -f /usr/include/oneapi/dnnl/dnnl.h ]] &&
     ! grep -q SQ_HAVE_DNNL "$build/build.ninja" 2>/dev/null; then
  meson setup --reconfigure "$build" "$src" >/dev/null # pick up the new library
fi
ninja -C "$build" tests/bench/kernel_bench >/dev/null
exec "$build/tests/bench/kernel_bench" ${args[@]+"${args[@]}"}
