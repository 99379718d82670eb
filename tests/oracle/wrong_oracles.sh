# Sourced by the check_*_parity.sh scripts: the proof that a parity check
# can fail, in one place.
#   run_wrong_oracles PY ORACLE MODEL OUT LONG_FROM MECHANISM...
# Each oracle with one mechanism changed (ORACLE --wrong MECHANISM) must
# disagree with squint's outputs OUT.tok.jsonl / .hid.npy / .npy. They only
# have to disagree, so they run on a sample (sample_outputs.py: the first 20
# inputs and those of at least LONG_FROM tokens, since some mechanisms only
# show past a length), with no count or length floor: only the comparison
# can fail them. 1 when one of them agrees.
run_wrong_oracles() {
    local py=$1 oracle=$2 model=$3 out=$4 long_from=$5 wrong
    shift 5
    "$py" "$(dirname "${BASH_SOURCE[0]}")/sample_outputs.py" "$out" "$out-sample" \
        --first 20 --long-from "$long_from" || return 1
    for wrong in "$@"; do
        echo "== the oracle with one mechanism changed ($wrong) must fail"
        if "$py" "$oracle" "$model" --tokens "$out-sample.tok.jsonl" --hidden "$out-sample.hid.npy" \
            --embeddings "$out-sample.npy" --threads 2 --wrong "$wrong"; then
            echo "FAIL: the oracle with $wrong still agrees: the check cannot fail"
            return 1
        fi
    done
}
