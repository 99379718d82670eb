#!/usr/bin/env bash
# Every GEMM path this CPU has, end to end: real .sqm files (int8 with
# SmoothQuant and activation zero points, int4-g128, a mixed int8/int4/fp32
# build) of a model with ragged widths (padding channels and inputs in every
# linear) are embedded under SQUINT_ISA=scalar, avx2, avxvnni, avx512vnni and
# amx; every path must give byte-identical .npy files, at 1 and 2 threads
# and with the GELU fused into ffn_down's quantize step or not (SQUINT_FUSE=0).
# Paths the CPU lacks are reported as SKIPPED and must be refused clearly.
# usage: test_isa_paths.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-isa-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
# --threads 2 runs are compared byte for byte with 1 thread: on these small
# fixtures every parallel operation takes every thread (libquant/cpu/par_threads.h)
export SQUINT_THREAD_MIN_NS=0
export SOURCE_DATE_EPOCH=1764633600

"$GEN" "$W/m" --shape tiny --seed 3 --hidden 72 --heads 4 --ffn 200 --layers 2 >/dev/null || exit 1
"$SQ" calibrate "$W/m" --samples 64 --quiet -o "$W/m.sqc" 2>/dev/null || { echo "calibrate failed"; exit 1; }
printf 'weights:\n  type: int4-g128\n' >"$W/int4.yaml"
cat >"$W/mixed.yaml" <<'YAML'
overrides:
  - match: "layer.0.ffn_*"
    type: int4-g128
  - match: "layer.1.attn_out"
    type: fp32
YAML
printf 'attention:\n  matmul: int8\n' >"$W/a8.yaml" # int8 attention (head width 18: ragged)
"$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/int8.sqm" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/a8.yaml" -o "$W/a8.sqm" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/int4.yaml" -o "$W/int4.sqm" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/mixed.yaml" -o "$W/mixed.sqm" 2>/dev/null ||
  { echo "quantize failed"; exit 1; }
"$SQ" inspect "$W/int8.sqm" | grep -Eq '^layer.0.ffn_down +int8 .* [1-9][0-9]* ' &&
  pass "the int8 build has an activation zero point (the fused offset path runs)" ||
  fail "no zero point in the int8 build"

# Texts of different lengths: 1 to ~60 tokens, so batches have 1..many rows
# (every micro-kernel row count and the tail tiles).
/usr/bin/python3 - "$W/texts.txt" <<'PY'
import sys, random
r = random.Random(5)
words = "the a model quantized int8 search index query document fast cpu vector embedding of to and in is for with retrieval ranking 2026 x-ray naïve café".split()
with open(sys.argv[1], "w") as f:
    for i in range(70):
        f.write(" ".join(r.choice(words) for _ in range(1 + (i * 7) % 45)) + "\n")
PY

isas=()
for isa in scalar avx2 avxvnni avx512vnni amx; do
  if SQUINT_ISA=$isa "$SQ" embed "$W/int8.sqm" --input "$W/texts.txt" --output "$W/probe.npy" 2>"$W/err"; then
    isas+=("$isa")
  else
    grep -q "lacks" "$W/err" && echo "SKIPPED: $isa ($(head -c 200 "$W/err"))" ||
      fail "SQUINT_ISA=$isa failed without naming a missing feature: $(cat "$W/err")"
  fi
done
echo "paths run end to end: ${isas[*]}"
[[ " ${isas[*]} " == *" scalar "* ]] || fail "the scalar path did not run"
grep -qw avx2 /proc/cpuinfo && { [[ " ${isas[*]} " == *" avx2 "* ]] || fail "the avx2 path did not run on an AVX2 CPU"; }
grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo &&
  { [[ " ${isas[*]} " == *" avx512vnni "* ]] || fail "the avx512vnni path did not run on a VNNI CPU"; }

for f in int8 int4 mixed a8; do
  for isa in "${isas[@]}"; do
    for t in 1 2; do
      SQUINT_ISA=$isa "$SQ" embed "$W/$f.sqm" --input "$W/texts.txt" --batch 16 --threads $t \
        --output "$W/$f.$isa.$t.npy" 2>"$W/err" || fail "$f.sqm under $isa, $t threads: $(cat "$W/err")"
    done
    # GELU as its own pass instead of inside ffn_down's quantize step (linear.h)
    SQUINT_FUSE=0 SQUINT_ISA=$isa "$SQ" embed "$W/$f.sqm" --input "$W/texts.txt" --batch 16 --threads 2 \
      --output "$W/$f.$isa.unfused.npy" 2>"$W/err" || fail "$f.sqm under $isa, unfused: $(cat "$W/err")"
  done
  ref="$W/$f.scalar.1.npy"
  same=1
  for isa in "${isas[@]}"; do
    for t in 1 2 unfused; do
      cmp -s "$ref" "$W/$f.$isa.$t.npy" || { same=0; fail "$f.sqm: $isa at $t threads differs from scalar"; }
    done
  done
  [[ $same == 1 ]] && pass "$f.sqm: byte-identical embeddings on ${isas[*]} at 1 and 2 threads, GELU fused or not"
done
cmp -s "$W/int8.scalar.1.npy" "$W/a8.scalar.1.npy" &&
  fail "attention int8 gave the same embeddings as f32 attention (not applied?)" ||
  pass "attention int8 is applied (its embeddings differ from f32 attention's)"
# The embeddings are not trivially equal: different texts give different vectors.
/usr/bin/python3 - "$W/int8.scalar.1.npy" <<'PY' && pass "the embeddings depend on the input" || fail "embeddings do not depend on the input"
import sys, numpy as np
e = np.load(sys.argv[1]); c = e @ e.T
m = np.mean(c[np.triu_indices(len(e), 1)]); print(f'mean pairwise cosine {m:.3f}')
sys.exit(0 if m < 0.9 else 1)
PY
finish
