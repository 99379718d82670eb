#!/usr/bin/env bash
# valgrind memcheck over the end-to-end flow on a tiny fixture: embed,
# calibrate, quantize, embed of the .sqm, embed-run against fp32, verify, diff. Fails on any memory
# error or definitely-lost block. (OpenMP's worker threads keep their
# thread-local storage until exit: "possibly lost", not counted.)
# usage: test_valgrind.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
command -v valgrind >/dev/null || { echo "SKIPPED: valgrind is not installed"; exit 77; }
W=$(mktemp -d /tmp/squint-vg-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
"$GEN" "$W/m" --shape tiny --seed 11 --outliers 1 >/dev/null || exit 1
printf 'Hello world!\nA second, longer sentence for the encoder.\n' > "$W/in.txt"
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
run() { # NAME -- command...
  local name=$1
  shift 2
  if "${VG[@]}" "$@" >"$W/out.txt" 2>"$W/vg.txt"; then pass "valgrind: $name"; else
    fail "valgrind: $name"; sed -n 1,40p "$W/vg.txt"; fi
}
run "embed" -- "$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/e.npy" --threads 2
run "calibrate" -- "$SQ" calibrate "$W/m" --samples 12 --quiet -o "$W/m.sqc" --threads 2
run "quantize" -- "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" --threads 2
run "embed .sqm" -- "$SQ" embed "$W/m.sqm" --input "$W/in.txt" --output "$W/q.npy" --threads 2
run "embed-run vs fp32" -- "$SQ" embed-run "$W/m.sqm" --input "$W/in.txt" --reference "$W/m" --gate cos_mean=0.9 --quiet --threads 2
run "verify" -- "$SQ" verify "$W/m.sqm"
run "diff" -- "$SQ" diff "$W/m.sqm" "$W/m.sqm"
run "inspect" -- "$SQ" inspect "$W/m.sqc"
finish
