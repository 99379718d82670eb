#!/usr/bin/env bash
# Build the libFuzzer harnesses (clang, ASan + UBSan, coverage on the whole
# project) in build-fuzz/ and run each one, bounded by executions (CI) or by
# time. Prints executions, coverage and crashes per harness; exits 1 when a
# harness crashed (or a saved reproducer still crashes), 2 on a setup error.
#
#   bash tests/fuzz/run-fuzzers.sh --runs 5000            # CI: bounded, not timed
#   bash tests/fuzz/run-fuzzers.sh --time 120 fuzz_yaml   # 2 minutes, one harness
#
# Options: --runs N and/or --time SECONDS (whichever ends first; default
# --runs 5000), --build-only, --no-build (run the binaries already built),
# --no-replay (skip replaying tests/fuzz/crashes/), harness names (default all).
set -uo pipefail
cd "$(dirname "$0")/../.."
SRC=tests/fuzz
BUILD=build-fuzz
WORK=$BUILD/fuzz-work

ALL=(fuzz_safetensors fuzz_hf_config fuzz_tokenizer fuzz_recipe fuzz_yaml fuzz_corpus fuzz_container fuzz_sqc fuzz_sqm fuzz_tfjs_model fuzz_use_vocab fuzz_serve_request fuzz_serve_completion fuzz_head fuzz_llama_ckpt fuzz_dec_sqm fuzz_bpe_tokenizer fuzz_tune_file fuzz_hf_bpe fuzz_tok_bytelevel fuzz_tok_hf_unigram)
# Largest input per harness: a bit above the biggest seed, small for speed.
declare -A MAX_LEN=([fuzz_safetensors]=16384 [fuzz_hf_config]=8192 [fuzz_tokenizer]=8192
                    [fuzz_recipe]=8192 [fuzz_yaml]=4096 [fuzz_corpus]=16384
                    [fuzz_container]=16384 [fuzz_sqc]=81920 [fuzz_sqm]=16384
                    [fuzz_tfjs_model]=16384 [fuzz_use_vocab]=8192 [fuzz_serve_request]=8192
                    [fuzz_serve_completion]=4096 [fuzz_head]=8192
                    [fuzz_llama_ckpt]=16384 [fuzz_dec_sqm]=24576 [fuzz_bpe_tokenizer]=16384
                    [fuzz_tune_file]=4096
                    [fuzz_hf_bpe]=16384 [fuzz_tok_bytelevel]=8192 [fuzz_tok_hf_unigram]=8192)

runs=; secs=; build_only=0; no_build=0; replay=1; sel=()
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --time) secs=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    --no-replay) replay=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    fuzz_*) sel+=("$1"); shift ;;
    *) echo "run-fuzzers: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ ${#sel[@]} -gt 0 ] || sel=("${ALL[@]}")
[ -n "$runs$secs" ] || runs=5000
bound=(); [ -n "$runs" ] && bound+=(-runs="$runs"); [ -n "$secs" ] && bound+=(-max_total_time="$secs")
# A fixed seed makes a bounded (CI) run explore the same inputs every time.
[ -n "$runs" ] && [ -z "$secs" ] && bound+=(-seed=1)

# ---- packages (clang, libFuzzer runtime, libomp) and the build ----
build() {
need=()
command -v clang >/dev/null || need+=(clang)
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 \
    || need+=(libclang-rt-14-dev)
# clang's OpenMP needs libomp-dev (omp.h and the runtime): checked with a
# program that includes omp.h, and needed at once on a machine without clang
# (a fresh one: meson then found OpenMP but no omp.h and gave up)
if ! command -v clang >/dev/null || ! printf '#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}\n' \
    | clang -fopenmp -x c - -o /dev/null 2>/dev/null; then need+=(libomp-dev); fi
if [ ${#need[@]} -gt 0 ]; then
    echo "run-fuzzers: installing ${need[*]}"
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null \
        || { echo "run-fuzzers: apt-get install ${need[*]} failed" >&2; exit 2; }
fi

# ---- build ----
cflags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# clang refuses libquant/kernels/ops.c's AVX2 helpers inside OpenMP-outlined loops
# unless AVX2 is the baseline; gcc accepts them. Harmless where AVX2 exists.
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && cflags+=" -mavx2 -mfma"
setup=(-Dfuzz=true -Dbuildtype=debugoptimized -Db_lundef=false
       "-Dc_args=$cflags" "-Dc_link_args=-fsanitize=address,undefined")
t0=$(date +%s)
if [ -f $BUILD/build.ninja ]; then
    meson setup --reconfigure $BUILD "${setup[@]}" >$BUILD/fuzz-setup.log 2>&1
else
    CC=clang meson setup $BUILD "${setup[@]}" >/tmp/squint-fuzz-setup.$$.log 2>&1
    mv /tmp/squint-fuzz-setup.$$.log $BUILD/fuzz-setup.log 2>/dev/null
fi || { cat $BUILD/fuzz-setup.log /tmp/squint-fuzz-setup.$$.log 2>/dev/null | tail -30; exit 2; }
targets=(); for h in "${sel[@]}"; do targets+=("$SRC/$h"); done
ninja -C $BUILD "${targets[@]}" >$BUILD/fuzz-build.log 2>&1 \
    || { grep -E 'error|FAILED' $BUILD/fuzz-build.log | head -30; exit 2; }
echo "run-fuzzers: built ${#sel[@]} harnesses in $(( $(date +%s) - t0 ))s"
}
[ $no_build = 1 ] || build || exit $?
[ $build_only = 1 ] && exit 0

# ---- run ----
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}
status=0
printf '%-18s %10s %8s %8s %8s %7s\n' harness execs cov ft crashes secs
for h in "${sel[@]}"; do
    bin=$BUILD/$SRC/$h
    dir=$WORK/${h#fuzz_}
    rm -rf "$dir"; mkdir -p "$dir/corpus" "$dir/crashes" "$dir/tmp"
    crashes=0
    # Saved reproducers first: each must no longer crash.
    saved=$SRC/crashes/${h#fuzz_}
    if [ $replay = 1 ] && [ -n "$(ls -A "$saved" 2>/dev/null)" ]; then
        if ! TMPDIR=$dir/tmp "$bin" -runs=1 "$saved"/* >"$dir/replay.log" 2>&1; then
            echo "  $h: a saved reproducer in $saved still crashes (see $dir/replay.log)"
            grep -m1 -E 'ERROR: |runtime error:' "$dir/replay.log" | sed 's/^/    /'
            crashes=$((crashes + 1))
        fi
    fi
    s0=$(date +%s)
    TMPDIR=$dir/tmp "$bin" "${bound[@]}" -max_len=${MAX_LEN[$h]} -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/crashes/" \
        "$dir/corpus" "$SRC/corpus/${h#fuzz_}" >"$dir/fuzz.log" 2>&1
    rc=$?
    n=$(ls -A "$dir/crashes" | wc -l)
    [ $rc != 0 ] && [ "$n" = 0 ] && n=1 # e.g. a harness that could not start
    crashes=$((crashes + n))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)
    covline=$(grep -E '^#[0-9]+.*cov: ' "$dir/fuzz.log" | tail -1)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$covline")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$covline")
    printf '%-18s %10s %8s %8s %8s %7s\n' "$h" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$crashes" \
        "$(( $(date +%s) - s0 ))"
    if [ $crashes != 0 ]; then
        status=1
        [ "$(ls -A "$dir/crashes")" ] && echo "  artifacts: $(ls -d "$dir"/crashes/* | tr '\n' ' ')"
        grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$dir/fuzz.log" \
            | sed 's/^/  /'
        echo "  log: $dir/fuzz.log"
    fi
    rm -rf "$dir/tmp"
done
exit $status
