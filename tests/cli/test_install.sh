#!/usr/bin/env bash
# `meson install` into a temporary DESTDIR, then as a user of the installed
# tree would: build examples/embed.c with `pkg-config --cflags --libs squint`
# (shared) and with --static, and compare with `squint embed` byte for byte;
# libsquint exports only squint_* symbols; the installation moved elsewhere
# still calibrates without --calib (the bundled corpus is found relative to
# the executable, never in the build or source tree), and says clearly when
# its data is gone.
# usage: test_install.sh BUILD_DIR SOURCE_DIR GEN_FIXTURE
set -uo pipefail
B=$1 S=$2 GEN=$3
W=$(mktemp -d /tmp/squint-inst-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
for tool in pkg-config cc nm; do
  command -v $tool >/dev/null || { echo "SKIPPED: $tool not installed"; exit 77; }
done
unset SQUINT_DATA SQUINT_BUNDLED_CORPUS

D=$W/dest
meson install -C "$B" --destdir "$D" --no-rebuild --quiet >"$W/install.log" 2>&1 ||
  { cat "$W/install.log"; echo "FAIL - meson install"; exit 1; }
pc=$(find "$D" -name squint.pc | head -n 1)
[[ -n $pc ]] || { echo "FAIL - no squint.pc installed"; exit 1; }
prefix=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=prefix squint)
libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir squint)
root=$D$prefix
for f in bin/squint include/squint.h share/squint/qasper-calib.jsonl.zst \
         share/squint/recipes/bge-small-en-v1.5.yaml share/squint/recipes/README.md; do
  [[ -f $root/$f ]] && pass "installed $f" || fail "not installed: $f"
done
so=$(ls "$D$libdir"/libsquint.so.* 2>/dev/null | head -n 1)
[[ -n $so && -f $D$libdir/libsquint.a ]] && pass "installed $(basename "$so") and libsquint.a" || fail "libraries not installed"
soname=$(objdump -p "$so" 2>/dev/null | awk '/SONAME/ {print $2}')
[[ $soname == libsquint.so.0 ]] && pass "soname $soname" || fail "soname '$soname'"
nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sed 's/@.*//' | sort -u >"$W/exports"
if [[ -s $W/exports ]] && ! grep -v '^squint_' "$W/exports" >/dev/null; then
  pass "only squint_* exported ($(wc -l <"$W/exports") symbols)"
else fail "exports beyond squint_*: $(grep -v '^squint_' "$W/exports" | head -5 | tr '\n' ' ')"; fi

# As a user: the .pc of the installed tree, relocated by the sysroot.
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$D
cc -O2 -o "$W/embed-shared" "$S/examples/embed.c" $(pkg-config --cflags --libs squint) 2>"$W/cc.log" ||
  { cat "$W/cc.log"; fail "build examples/embed.c with pkg-config squint"; }
cc -O2 -o "$W/rerank-shared" "$S/examples/rerank.c" $(pkg-config --cflags --libs squint) 2>"$W/cc.log" ||
  { cat "$W/cc.log"; fail "build examples/rerank.c with pkg-config squint"; }
# libsquint.a with the shared system libraries it needs (a fully static
# link would need static builds of libarchive's own dependencies, which
# Debian's -dev packages do not all ship).
static_libs="-L$D$libdir -l:libsquint.a $(pkg-config --libs $(pkg-config --print-requires-private squint)) -fopenmp -lm -pthread"
cc -O2 -o "$W/embed-static" "$S/examples/embed.c" $(pkg-config --cflags squint) $static_libs 2>"$W/cc2.log" ||
  { cat "$W/cc2.log"; fail "build examples/embed.c against libsquint.a"; }
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
if [[ -x $W/embed-static ]] && ! ldd "$W/embed-static" | grep -q libsquint; then pass "static build has no libsquint.so"
else fail "the static build is missing or links libsquint.so"; fi

"$GEN" "$W/m" --shape tiny --seed 9 --outliers 2 >/dev/null || exit 1
"$root/bin/squint" quantize "$W/m" -o "$W/m.sqm" >"$W/q.log" 2>&1 || fail "installed squint quantize without --calib: $(tail -n 2 "$W/q.log")"
printf 'first text\nsecond, different text\n\nlast one\n' >"$W/in.txt"
"$root/bin/squint" embed "$W/m.sqm" --input "$W/in.txt" --quiet >"$W/cli.jsonl"
LD_LIBRARY_PATH=$D$libdir "$W/embed-shared" "$W/m.sqm" <"$W/in.txt" >"$W/shared.jsonl" || fail "run shared example"
"$W/embed-static" "$W/m.sqm" <"$W/in.txt" >"$W/static.jsonl" || fail "run static example"
[[ -s $W/cli.jsonl ]] && cmp -s "$W/cli.jsonl" "$W/shared.jsonl" && pass "shared example = squint embed" || fail "shared example differs"
[[ -s $W/cli.jsonl ]] && cmp -s "$W/cli.jsonl" "$W/static.jsonl" && pass "static example = squint embed" || fail "static example differs"
"$root/bin/squint" rerank "$W/m.sqm" --query "a different text" --docs "$W/in.txt" >"$W/cli-r.jsonl"
LD_LIBRARY_PATH=$D$libdir "$W/rerank-shared" "$W/m.sqm" "a different text" <"$W/in.txt" >"$W/shared-r.jsonl" ||
  fail "run the shared rerank example"
[[ -s $W/cli-r.jsonl ]] && cmp -s "$W/cli-r.jsonl" "$W/shared-r.jsonl" && pass "shared rerank example = squint rerank" ||
  fail "the shared rerank example differs from squint rerank"

# Move the installation: the data is found relative to the executable.
mv "$root" "$W/moved"
"$W/moved/bin/squint" calibrate "$W/m" --samples 16 --quiet -o "$W/moved.sqc" 2>"$W/cal.err" &&
  pass "moved installation calibrates without --calib" || fail "moved installation: $(cat "$W/cal.err")"
mv "$W/moved/share/squint" "$W/data-aside"
expect_rc "no installed data: clear message" 2 "bundled calibration corpus" "$W/none.sqc" -- \
  "$W/moved/bin/squint" calibrate "$W/m" --samples 16 --quiet -o "$W/none.sqc"
SQUINT_DATA=$W/data-aside "$W/moved/bin/squint" calibrate "$W/m" --samples 16 --quiet -o "$W/env.sqc" 2>"$W/env.err" &&
  pass "SQUINT_DATA points to moved data" || fail "SQUINT_DATA: $(cat "$W/env.err")"
[[ -s $W/moved.sqc ]] && cmp -s "$W/moved.sqc" "$W/env.sqc" && pass "same statistics from either data location" || fail ".sqc differs by data location"
finish
