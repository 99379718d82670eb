#!/usr/bin/env bash
# Wrapper of test_dask.py: a fixture model, the binding on PYTHONPATH.
# usage: test_dask.sh SQUINT GEN_FIXTURE LIBSQUINT   (needs SQUINT_SHARED_DATA)
set -uo pipefail
SQ=$(realpath "$1") GEN=$(realpath "$2") LIB=$(realpath "$3")
D=${SQUINT_SHARED_DATA:-}
HERE=$(cd "$(dirname "$0")" && pwd)
CORPUS=$D/scifact/beir-format/corpus.jsonl
[[ -f $CORPUS ]] || { echo "SKIP: no SciFact corpus under \$SQUINT_SHARED_DATA"; exit 77; }
/usr/bin/python3 -c "import distributed, numpy" 2>/dev/null ||
  { echo "SKIP: python3-distributed / python3-numpy not installed"; exit 77; }
W=$(mktemp -d /tmp/squint-dask-XXXXXX)
trap 'rm -rf "$W"' EXIT
"$GEN" "$W/m" --shape tiny --seed 9 --outliers 2 >/dev/null &&
  "$SQ" calibrate "$W/m" --samples 64 --quiet -o "$W/m.sqc" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>&1 ||
  { echo "FAIL - fixture"; exit 1; }
cd "$W"
export PYTHONPATH=$HERE/../../python${PYTHONPATH:+:$PYTHONPATH} SQUINT_LIB=$LIB
export PYTHONDONTWRITEBYTECODE=1 DASK_DISTRIBUTED__WORKER__DAEMON=False
timeout 600 /usr/bin/python3 "$HERE/test_dask.py" "$W/m.sqm" "$CORPUS"
