#!/usr/bin/env bash
# Set up everything the tests need and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
meson test -C build --print-errorlogs "$@"
# Every parser under libFuzzer (clang, ASan + UBSan) for a bounded number of
# executions, replaying the saved crash reproducers first.
bash tests/fuzz/run-fuzzers.sh --runs 5000
