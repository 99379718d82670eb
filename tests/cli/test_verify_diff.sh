#!/usr/bin/env bash
# End-to-end tests of `squint verify`, `squint diff` and `squint inspect` on
# model files (.sqm): intact files verify, any single damaged byte is found
# and named, inconsistent models are refused, diffs find exactly what
# changed, and every --json output is JSON.
# usage: test_verify_diff.sh SQUINT MAKE_TEST_SQM
set -uo pipefail
SQ=$1
MK=$2
W=$(mktemp -d /tmp/squint-verify-XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; fails=$((fails + 1)); }
is_json() { python3 -c 'import json,sys; json.load(sys.stdin)'; }
run() { # NAME WANT_RC -- command...: checks the exit code only
  local name=$1 want=$2
  shift 3
  "$@" >"$W/out" 2>"$W/err"
  local rc=$?
  [[ $rc -eq $want ]] && pass "$name" || fail "$name: exit $rc, want $want ($(head -c 300 "$W/err"))"
}

"$MK" "$W/a.sqm" --seed 1 || exit 1
"$MK" "$W/a2.sqm" --seed 1 || exit 1
"$MK" "$W/b.sqm" --seed 1 --perturb layer.1.ffn_up.bias || exit 1
"$MK" "$W/int4.sqm" --seed 1 --qtype int4 || exit 1
"$MK" "$W/fp32.sqm" --seed 1 --qtype f32 || exit 1
"$MK" "$W/z.sqm" --seed 1 --zstd || exit 1
"$MK" "$W/noscale.sqm" --seed 1 --drop layer.0.ffn_down.scale || exit 1
"$MK" "$W/zp.sqm" --seed 1 --act-zero 127 || exit 1
"$MK" "$W/zp_big.sqm" --seed 1 --act-zero 128 || exit 1
"$MK" "$W/zp_int4.sqm" --seed 1 --qtype int4 --act-zero 5 || exit 1
head -c 4000 /dev/urandom >"$W/random.bin"

# --- verify ---
for f in a int4 fp32 z zp; do
  run "verify $f.sqm" 0 -- "$SQ" verify "$W/$f.sqm"
  grep -q "^$W/$f.sqm: OK ([0-9]* tensors, [0-9]* bytes, model" "$W/out" && pass "verify $f.sqm says OK" ||
    fail "verify $f.sqm output: $(cat "$W/out")"
done
"$SQ" verify --json "$W/a.sqm" | is_json && pass "verify --json is JSON" || fail "verify --json"
run "verify a non-squint file" 2 -- "$SQ" verify "$W/random.bin"
run "verify a missing file" 2 -- "$SQ" verify "$W/none.sqm"
run "verify --help" 0 -- "$SQ" verify --help
run "verify: model without a companion tensor" 1 -- "$SQ" verify "$W/noscale.sqm"
grep -q 'layer.0.ffn_down.scale' "$W/out" && pass "the missing companion is named" ||
  fail "missing companion not named: $(cat "$W/out")"
# Activation zero points: [-127, 127], int8 linears only (the loader, sqm_model.c, checks the same).
for f in zp_big zp_int4; do
  run "verify: $f.sqm (bad act_zero)" 1 -- "$SQ" verify "$W/$f.sqm"
  grep -q 'layer.0.ffn_down.act_zero' "$W/out" && pass "verify names the bad zero point ($f)" ||
    fail "bad act_zero not named: $(cat "$W/out")"
done
"$SQ" inspect "$W/zp.sqm" | grep -Eq '^layer.0.ffn_down +int8 .* 127 ' &&
  pass "inspect shows the zero point" || fail "inspect zero point: $("$SQ" inspect "$W/zp.sqm" | grep ffn_down)"

# Single damaged bytes at 50 seeded positions: always exit 1, always naming
# a part; a byte inside a tensor's data names that tensor.
"$SQ" inspect "$W/a.sqm" --json --tensors >"$W/a.json" || fail "inspect --tensors"
python3 - "$W/a.sqm" "$W/a.json" >"$W/flips" <<'PY'
import json, random, struct, sys
data = open(sys.argv[1], 'rb').read()
tensors = json.load(open(sys.argv[2]))['tensors']
data_offset = struct.unpack_from('<Q', data, 48)[0]
rng = random.Random(20251202)
for _ in range(50):
    pos = rng.randrange(len(data))
    owner = next((t['name'] for t in tensors
                  if data_offset + t['offset'] <= pos < data_offset + t['offset'] + t['bytes']), '-')
    print(pos, owner)
PY
nflip=0
while read -r pos owner; do
  python3 -c 'import sys; d=bytearray(open(sys.argv[1],"rb").read()); d[int(sys.argv[3])]^=0x10; open(sys.argv[2],"wb").write(d)' \
    "$W/a.sqm" "$W/f.sqm" "$pos"
  out=$("$SQ" verify "$W/f.sqm" 2>&1)
  rc=$?
  dout=$("$SQ" diff "$W/a.sqm" "$W/f.sqm" 2>&1 >/dev/null)
  drc=$?
  if [[ $rc -ne 1 || "$out" != *DAMAGED* ]]; then
    fail "byte $pos flipped: exit $rc, output '$out'"
  elif [[ "$owner" != "-" && "$out" != *"tensor \"$owner\""* ]]; then
    fail "byte $pos in tensor $owner: output '$out'"
  elif [[ $drc -ne 2 ]]; then # diff compares only intact files
    fail "byte $pos flipped: diff exit $drc ($dout)"
  else
    nflip=$((nflip + 1))
  fi
done <"$W/flips"
[[ $nflip -eq 50 ]] && pass "50 single-byte corruptions found and named by verify, refused by diff" ||
  fail "only $nflip/50 corruptions handled"
intensor=$(awk '$2 != "-"' "$W/flips" | wc -l)
[[ $intensor -ge 10 ]] && pass "$intensor of them inside tensors" || fail "only $intensor flips hit tensors"
"$SQ" verify --json "$W/f.sqm" >"$W/out"
is_json <"$W/out" && pass "verify --json on a damaged file is JSON" || fail "verify --json damaged"

head -c 20000 "$W/a.sqm" >"$W/trunc.sqm"
"$SQ" verify "$W/trunc.sqm" >"$W/out" 2>&1
rc=$?
[[ ($rc -eq 1 || $rc -eq 2) && $(cat "$W/out") == *truncated* ]] && pass "truncated file: exit $rc, says truncated" ||
  fail "truncated: exit $rc, '$(cat "$W/out")'"
python3 -c 'import sys; d=bytearray(open(sys.argv[1],"rb").read()); d[len(d)//2]^=1; open(sys.argv[2],"wb").write(d)' "$W/z.sqm" "$W/zbad.sqm"
run "damaged zstd file" 1 -- "$SQ" verify "$W/zbad.sqm"

# --- zstd form: several frames, and streams that claim more than they hold ---
# A valid multi-frame stream (an empty first frame of content size 0, then
# the model) is what `zstd -t` accepts: squint reads it too.
if command -v zstd >/dev/null; then
  { printf '' | zstd -q -c; zstd -q -c <"$W/a.sqm"; } >"$W/multi.sqm"
  zstd -q -t "$W/multi.sqm" && run "verify: empty first frame, then the model" 0 -- "$SQ" verify "$W/multi.sqm"
  run "diff multi-frame and plain: identical" 0 -- "$SQ" diff "$W/a.sqm" "$W/multi.sqm"
  { zstd -q -c <"$W/a.sqm"; printf '' | zstd -q -c; printf '' | zstd -q -c; } >"$W/trail.sqm"
  run "verify: the model, then two empty frames" 0 -- "$SQ" verify "$W/trail.sqm"
  head -c -2 "$W/trail.sqm" >"$W/trail_cut.sqm"
  run "verify: last frame cut short" 1 -- "$SQ" verify "$W/trail_cut.sqm"
else
  echo "skip - multi-frame zstd (no zstd command)"
fi
# Hand-made frames (RFC 8878): a raw block holding the first 128 bytes of a
# real container whose file_size says 1.2 GB; the frame declares 1.2 GB too
# (bomb), or declares nothing, or the two disagree. Under a 400 MiB address
# space limit none may allocate what it claims: each must be refused with a
# message about the stream, never "out of memory".
python3 - "$W/a.sqm" "$W" <<'PY'
import struct, sys
hdr = bytearray(open(sys.argv[1], "rb").read()[:128])
big = 1_200_000_000
hdr[64:72] = struct.pack("<Q", big)
def frame(fcs, body, last=True):
    if fcs is None:
        fhd = 0x00                              # no content size, window descriptor follows
        out = struct.pack("<IB", 0xFD2FB528, fhd) + bytes([0x50])   # window 1 MiB
    else:
        fhd = 0xC0                              # 8-byte content size, window descriptor
        out = struct.pack("<IB", 0xFD2FB528, fhd) + bytes([0x50]) + struct.pack("<Q", fcs)
    bh = (len(body) << 3) | (0 << 1) | (1 if last else 0)   # raw block
    return out + struct.pack("<I", bh)[:3] + bytes(body)
W = sys.argv[2]
open(W + "/bomb.sqm", "wb").write(frame(big, hdr))
open(W + "/bomb_nosize.sqm", "wb").write(frame(None, hdr))
open(W + "/bomb_mismatch.sqm", "wb").write(frame(128, hdr))
hdr2 = bytearray(hdr); hdr2[0:4] = b"ZZZZ"
open(W + "/not_container.sqm", "wb").write(frame(None, hdr2))
PY
# (AddressSanitizer reserves terabytes of address space for its shadow: an
# instrumented build runs these without the limit; the plain build keeps it.)
limit_kb=409600
[[ $(ldd "$SQ" 2>/dev/null) == *libasan* ]] && limit_kb=unlimited
zrun() { # NAME NEEDLE FILE
  local out rc
  out=$( (ulimit -v $limit_kb; "$SQ" verify "$3") 2>&1)
  rc=$?
  if [[ $rc -ne 0 && $out == *"$2"* && $out != *"out of memory"* ]]; then pass "$1"
  else fail "$1: exit $rc, '$out'"; fi
}
zrun "zstd bomb declaring 1.2 GB: refused without allocating it" "zstd" "$W/bomb.sqm"
zrun "zstd stream without a size, header says 1.2 GB: refused" "truncated" "$W/bomb_nosize.sqm"
zrun "zstd frame size disagrees with the container header" "container header says" "$W/bomb_mismatch.sqm"
zrun "zstd stream that is not a container" "does not hold a squint container" "$W/not_container.sqm"

# --- diff ---
run "diff a file with itself" 0 -- "$SQ" diff "$W/a.sqm" "$W/a.sqm"
grep -q identical "$W/out" && pass "diff says identical" || fail "diff self: $(cat "$W/out")"
run "diff two identical builds" 0 -- "$SQ" diff "$W/a.sqm" "$W/a2.sqm"
run "diff plain and zstd forms" 0 -- "$SQ" diff "$W/a.sqm" "$W/z.sqm"
run "diff one changed tensor" 1 -- "$SQ" diff "$W/a.sqm" "$W/b.sqm"
grep -q '^layer.1.ffn_up.bias ' "$W/out" && pass "diff names the changed tensor" || fail "diff text: $(cat "$W/out")"
"$SQ" diff --json "$W/a.sqm" "$W/b.sqm" >"$W/d.json"
[[ $? -eq 1 ]] && pass "diff --json exits 1" || fail "diff --json exit"
python3 - "$W/d.json" <<'PY' && pass "diff --json: exactly that tensor differs, finite SQNR" || fail "diff --json content"
import json, math, sys
d = json.load(open(sys.argv[1]))
bad = [t for t in d['tensors'] if t['status'] != 'equal']
assert [t['name'] for t in bad] == ['layer.1.ffn_up.bias'], bad
t = bad[0]
assert isinstance(t['sqnr_db'], float) and math.isfinite(t['sqnr_db']), t
assert abs(t['max_abs'] - 0.25) < 1e-6, t
assert d['metadata'] == [] and d['only_in_a'] == [] and d['only_in_b'] == []
assert all(t['sqnr_db'] == 'inf' for t in d['tensors'] if t['status'] == 'equal')
PY
run "diff within --tolerance" 0 -- "$SQ" diff --tolerance 0.3 "$W/a.sqm" "$W/b.sqm"
run "diff with a non-squint file" 2 -- "$SQ" diff "$W/a.sqm" "$W/random.bin"
run "diff with a missing file" 2 -- "$SQ" diff "$W/none.sqm" "$W/a.sqm"
run "diff --tolerance must be a number" 2 -- "$SQ" diff --tolerance x "$W/a.sqm" "$W/b.sqm"
"$SQ" diff --json "$W/a.sqm" "$W/int4.sqm" >"$W/d4.json"
[[ $? -eq 1 ]] && pass "int8 vs int4 build differ" || fail "int8 vs int4 exit"
python3 - "$W/d4.json" <<'PY' && pass "int8 vs int4: weights compared dequantized, metadata types listed" || fail "int8 vs int4 content"
import json, sys
d = json.load(open(sys.argv[1]))
w = [t for t in d['tensors'] if t['name'].endswith('.weight') and t['name'].startswith('layer.')]
assert len(w) == 8 and all(t['dtype_a'] == 's8-panel' and t['dtype_b'] == 's4g128-panel' for t in w)
assert all(isinstance(t['sqnr_db'], float) and 10 < t['sqnr_db'] < 60 for t in w), w
assert any(m['path'] == 'linears[layer.0.qkv].type' and m['b'] == 'int4-g128' for m in d['metadata'])
PY
"$SQ" diff --json "$W/fp32.sqm" "$W/a.sqm" >"$W/out"
python3 <"$W/out" -c '
import json, sys
d = json.load(sys.stdin)
w = [t for t in d["tensors"] if t["name"] == "layer.0.qkv.weight"][0]
assert w["dtype_a"] == "f32" and w["sqnr_db"] > 30, w
assert "layer.0.qkv.scale" in [t["name"] for t in d["only_in_b"]]' && pass "fp32 vs int8 build compared" || fail "fp32 vs int8"

# --- inspect ---
run "inspect a model" 0 -- "$SQ" inspect "$W/a.sqm"
grep -q 'checksums: OK' "$W/out" && grep -q '^layer.1.ffn_down ' "$W/out" && grep -q 'tensor bytes: fp32' "$W/out" &&
  pass "inspect text output" || fail "inspect text: $(cat "$W/out")"
"$SQ" inspect --json "$W/int4.sqm" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["kind"] == "model" and d["verify"]["status"] == "ok"
assert d["bytes"]["int4"] > 0 and d["bytes"]["total"] == sum(d["bytes"][k] for k in ("fp32", "int8", "int4", "other"))
l = d["linears"][0]
assert l["name"] == "layer.0.qkv" and l["type"] == "int4-g128" and l["shape"] == [96, 32] and l["alpha"] == 0.5
assert d["metadata"]["config"]["hidden"] == 32' && pass "inspect --json" || fail "inspect --json"
"$SQ" inspect --tensors "$W/z.sqm" >"$W/out"
grep -q '^tokenizer.vocab  *u8 ' "$W/out" && pass "inspect --tensors on a zstd file" ||
  fail "inspect --tensors"
"$SQ" inspect "$W/f.sqm" >"$W/out" 2>&1
rc=$?
[[ $rc -ne 0 ]] && pass "inspect of a damaged file exits $rc" || fail "inspect damaged: exit 0"
run "inspect a non-squint file" 2 -- "$SQ" inspect "$W/random.bin"

# Output that cannot be written is a failure, said on stderr (exit 2), for
# every command whose result is its standard output.
if [[ -w /dev/full ]]; then
  for c in "inspect $W/a.sqm" "inspect --json $W/a.sqm" "verify $W/a.sqm" "verify --json $W/a.sqm" \
           "diff $W/a.sqm $W/b.sqm" "tokenize $W/a.sqm --input $W/a.json"; do
    msg=$("$SQ" $c 2>&1 >/dev/full); rc=$?
    [[ $rc -eq 2 && "$msg" == *"writing standard output"* ]] && pass "$c > /dev/full: exit 2, said so" ||
      fail "$c > /dev/full: exit $rc ($msg)"
  done
else
  echo "skip - /dev/full tests (no writable /dev/full)"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
