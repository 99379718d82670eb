#!/usr/bin/env bash
# Set up everything the tests need and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
meson test -C build --print-errorlogs "$@"
