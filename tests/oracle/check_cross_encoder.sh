#!/usr/bin/env bash
# fp32 parity of `squint rerank` on cross-encoders with the independent
# PyTorch oracle (torch_cross_encoder.py): generated BertForSequenceClassification
# fixtures (tiny; bge-small width with outliers, bge vocabulary when the
# shared data has it), 120 QASPER question/evidence pairs, at the model's
# length and at a short --max-seq that truncates documents first and long
# queries too. Exit: 0 pass, 1 mismatch, 77 skipped (no torch).
# usage: check_cross_encoder.sh SQUINT GEN_FIXTURE PAIR_CORPUS [SHARED_DATA]
set -uo pipefail
SQ=$1 GEN=$2 PAIRS=$3 DATA=${4:-}
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' >/dev/null 2>&1; then
    echo "skipped: $py has no torch (install python3-torch and python3-numpy)"
    exit 77
fi
W=$(mktemp -d /tmp/squint-ce-oracle-XXXXXX)
trap 'rm -rf "$W"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
zstdcat "$PAIRS" | sed -n '1,120p' >"$W/pairs.jsonl" || exit 2
vocab=()
[[ -n $DATA && -f $DATA/bge-small-en-v1.5/vocab.txt ]] && vocab=(--vocab "$DATA/bge-small-en-v1.5/vocab.txt")
"$GEN" --cross-encoder 1 --ce-activation identity "$W/tiny" >/dev/null || exit 2
"$GEN" --shape bge-small --layers 2 --outliers 2 --cross-encoder 1 "${vocab[@]}" "$W/small" >/dev/null || exit 2
rc=0
for m in tiny small; do
    for len in 0 40; do
        args=()
        [[ $len -gt 0 ]] && args=(--max-seq "$len")
        echo "== $m ${args[*]}"
        "$py" "$here/torch_cross_encoder.py" "$W/$m" "$W/pairs.jsonl" --squint "$SQ" "${args[@]}" || rc=1
    done
done
exit $rc
