#!/usr/bin/env bash
# SIGINT / SIGTERM / SIGHUP leave nothing behind: `squint quantize` of a
# model packed in a .tar.gz, stopped while its output is fully written to
# OUT.tmp.XXXXXX and the archive is extracted under $TMPDIR (block_fsync.so
# holds it in fsync, no timing involved), removes both, leaves the previous
# output untouched, and dies of the signal (exit 128 + N). The extraction
# skips other frameworks' weights (pytorch_model.bin, onnx/) and refuses an
# oversized JSON member before extracting anything.
# usage: test_signals.sh SQUINT GEN_FIXTURE BLOCK_FSYNC_SO
set -uo pipefail
SQ=$1 GEN=$2 SHIM=$3
W=$(mktemp -d /tmp/squint-sig-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
# Job control: without it bash starts background jobs with SIGINT ignored
# (and squint keeps a signal its parent ignored, as nohup expects).
set -m

"$GEN" "$W/m" --shape tiny --seed 4 >/dev/null || exit 1
head -c 3000000 /dev/zero >"$W/m/pytorch_model.bin"
mkdir -p "$W/m/onnx" && head -c 1000 /dev/zero >"$W/m/onnx/model.onnx"
tar -C "$W" -czf "$W/m.tar.gz" m
"$SQ" calibrate "$W/m.tar.gz" --samples 16 --quiet -o "$W/m.sqc" 2>/dev/null || { echo "calibrate failed"; exit 1; }
echo previous >"$W/out.sqm"

for sig in INT TERM HUP; do
  T=$W/tmp-$sig
  mkdir -p "$T"
  rm -f "$W/marker"
  # env --default-signal: a signal ignored by whoever started the test
  # (nohup ignores SIGHUP) would stay ignored by squint, as it should.
  TMPDIR=$T SQ_TEST_FSYNC_MARKER=$W/marker LD_PRELOAD=$SHIM env --default-signal=HUP,INT,TERM \
    "$SQ" quantize "$W/m.tar.gz" --calib "$W/m.sqc" -o "$W/out.sqm" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do [[ -e $W/marker ]] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if [[ ! -e $W/marker ]]; then fail "SIG$sig: quantize never reached its commit"; kill -9 $pid 2>/dev/null; continue; fi
  ls "$W"/out.sqm.tmp.* >/dev/null 2>&1 && extracted=$(ls "$T") || extracted=""
  [[ -n $extracted && ! -e $T/$extracted/m/pytorch_model.bin && ! -e $T/$extracted/m/onnx && -f $T/$extracted/m/config.json ]] &&
    pass "SIG$sig: before the signal: temp output and extraction folder exist, without pytorch_model.bin / onnx/" ||
    fail "SIG$sig: state before the signal: tmp=$(ls "$W"/out.sqm.tmp.* 2>/dev/null) extracted='$extracted' $(ls -R "$T" | head -20 | tr '\n' ' ')"
  kill -$sig $pid
  for _ in $(seq 1 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then fail "SIG$sig: still running 30 s after the signal"; kill -9 $pid; fi
  wait $pid
  rc=$?
  want=$((128 + $(kill -l $sig)))
  [[ $rc -eq $want ]] && pass "SIG$sig: exit $rc (killed by the signal)" || fail "SIG$sig: exit $rc, want $want"
  ls "$W"/out.sqm.tmp.* >/dev/null 2>&1 && fail "SIG$sig: left $(ls "$W"/out.sqm.tmp.*)" || pass "SIG$sig: no temp output left"
  [[ -z $(ls -A "$T") ]] && pass "SIG$sig: extraction folder removed" || fail "SIG$sig: left $(ls -A "$T")"
  [[ $(cat "$W/out.sqm") == previous ]] && pass "SIG$sig: previous output untouched" || fail "SIG$sig: output replaced"
done

# A JSON member over 64 MiB is refused from the archive header, before extraction.
mkdir -p "$W/big/m2" && cp "$W/m/config.json" "$W/big/m2/" && truncate -s 70M "$W/big/m2/tokenizer.json"
tar -C "$W/big" -czf "$W/big.tar.gz" m2
T=$W/tmp-big; mkdir -p "$T"
echo hello >"$W/one.txt"
TMPDIR=$T expect_error "oversized JSON member refused" "over the 67108864-byte limit" "" -- \
  "$SQ" embed "$W/big.tar.gz" --input "$W/one.txt"
[[ -z $(ls -A "$T") ]] && pass "nothing left after refusing the archive" || fail "left $(ls -A "$T")"
finish
