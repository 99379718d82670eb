#!/usr/bin/env bash
# Set up everything the tests need and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
# After each suite: its slowest tests with their timeouts (reported, never failed on).
meson test -C build --print-errorlogs "$@" || { rc=$?; python3 scripts/slowest_tests.py build || true; exit $rc; }
python3 scripts/slowest_tests.py build || true
# The whole suite once more under AddressSanitizer + UndefinedBehaviorSanitizer
# (valgrind does not mix with ASan, so that suite is left to the plain build,
# as are the accuracy suite, minutes of 12-layer model runs, and the oracle
# suite, PyTorch references at base shapes: the code paths of both are the
# CLI tests' at small shapes, which run here; together they would take the
# CI past its 90 minutes on a 2-vCPU AVX2-only host).
if [[ ! -f build-asan/build.ninja ]]; then
  meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized >/dev/null
fi
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --no-suite valgrind --no-suite accuracy --no-suite oracle \
    --timeout-multiplier 4 "$@" ||
  { rc=$?; python3 scripts/slowest_tests.py build-asan --multiplier 4 || true; exit $rc; }
python3 scripts/slowest_tests.py build-asan --multiplier 4 || true
# Every parser under libFuzzer (clang, ASan + UBSan) for a bounded number of
# executions, replaying the saved crash reproducers first.
bash tests/fuzz/run-fuzzers.sh --runs 5000
