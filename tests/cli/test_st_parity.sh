#!/usr/bin/env bash
# sentence-transformers layouts as sentence-transformers reads them:
# max_seq_length of sentence_bert_config.json truncates (below the model's
# positions and the tokenizer's limit), the Transformer module's folder
# (modules.json "path": "0_Transformer") holds config, weights and
# tokenizer, a module squint cannot run (Dense) is refused by name, and a
# cross-encoder / classifier checkpoint is refused instead of embedded.
# usage: test_st_parity.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1 GEN=$2
W=$(mktemp -d /tmp/squint-st-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"

"$GEN" "$W/m" --shape tiny --seed 8 >/dev/null || exit 1
long="a very long text with many many words that goes on and on for quite a while so that it has far more than a dozen tokens"
printf '%s\nshort one\n' "$long" >"$W/in.txt"

# 1. max_seq_length: 10 tokens, as --max-seq 10 gives.
cp -r "$W/m" "$W/msl"
printf '{"max_seq_length": 10, "do_lower_case": true}\n' >"$W/msl/sentence_bert_config.json"
"$SQ" embed "$W/msl" --input "$W/in.txt" --tokens-output "$W/msl.tok" --output "$W/msl.npy" --quiet
"$SQ" embed "$W/m" --input "$W/in.txt" --max-seq 10 --output "$W/cut.npy" --quiet
/usr/bin/python3 -c "import json,sys; n=[len(json.loads(l)['ids']) for l in open(sys.argv[1])]; sys.exit(0 if n[0]==10 else 1)" "$W/msl.tok" &&
  cmp -s "$W/msl.npy" "$W/cut.npy" && pass "max_seq_length 10 truncates as --max-seq 10" || fail "max_seq_length ignored"
"$SQ" quantize "$W/msl" -o "$W/msl.sqm" >/dev/null 2>&1
"$SQ" inspect "$W/msl.sqm" >"$W/inspect.txt" 2>&1
grep -Eq "max_seq[^0-9]*10\b" "$W/inspect.txt" && pass "the .sqm keeps max_seq 10" || fail "the .sqm lost max_seq_length: $(grep -i max_seq "$W/inspect.txt")"

# 2. The Transformer module in its own folder.
mkdir -p "$W/st/0_Transformer"
for f in config.json model.safetensors tokenizer.json tokenizer_config.json vocab.txt special_tokens_map.json sentence_bert_config.json; do
  [[ -e $W/m/$f ]] && cp "$W/m/$f" "$W/st/0_Transformer/"
done
cp -r "$W/m/1_Pooling" "$W/st/"
sed 's|"path": ""|"path": "0_Transformer"|' "$W/m/modules.json" >"$W/st/modules.json"
"$SQ" embed "$W/m" --input "$W/in.txt" --output "$W/flat.npy" --quiet
"$SQ" embed "$W/st" --input "$W/in.txt" --output "$W/nested.npy" --quiet 2>"$W/st.err" &&
  cmp -s "$W/flat.npy" "$W/nested.npy" && pass "modules.json Transformer path 0_Transformer" || fail "0_Transformer layout: $(cat "$W/st.err")"

# 3. A Dense module is refused by name.
cp -r "$W/m" "$W/dense"
/usr/bin/python3 - "$W/dense/modules.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
json.dump(m, open(sys.argv[1], "w"))
PY
expect_error "Dense module refused by name" "sentence_transformers.models.Dense" "" -- "$SQ" embed "$W/dense" --input "$W/in.txt"

# 4. A cross-encoder is refused.
cp -r "$W/m" "$W/ce"
/usr/bin/python3 - "$W/ce/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["architectures"] = ["BertForSequenceClassification"]; c["num_labels"] = 1
json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "cross-encoder refused" "BertForSequenceClassification" "" -- "$SQ" embed "$W/ce" --input "$W/in.txt"
expect_error "cross-encoder not quantized" "cross-encoder" "$W/ce.sqm" -- "$SQ" quantize "$W/ce" -o "$W/ce.sqm"

# 5. Prompts: --prefix TEXT, or --prompt NAME from config_sentence_transformers.json.
printf 'query: what is a cat\nquery: short one\n' >"$W/prefixed.txt"
printf 'what is a cat\nshort one\n' >"$W/plain.txt"
"$SQ" embed "$W/m" --input "$W/prefixed.txt" --output "$W/p0.npy" --quiet
"$SQ" embed "$W/m" --input "$W/plain.txt" --prefix "query: " --output "$W/p1.npy" --quiet
cmp -s "$W/p0.npy" "$W/p1.npy" && pass "--prefix = the text written in front" || fail "--prefix"
printf '{"prompts": {"query": "query: ", "document": ""}, "default_prompt_name": null}\n' \
  >"$W/m/config_sentence_transformers.json"
"$SQ" embed "$W/m" --input "$W/plain.txt" --prompt query --output "$W/p2.npy" --quiet
cmp -s "$W/p0.npy" "$W/p2.npy" && pass "--prompt query from config_sentence_transformers.json" || fail "--prompt"
expect_error "unknown prompt names the ones there are" "prompts: query, document" "" -- \
  "$SQ" embed "$W/m" --input "$W/plain.txt" --prompt passage
"$SQ" quantize "$W/m" -o "$W/m.sqm" >/dev/null 2>&1
expect_error "--prompt on a .sqm" "give the text with --prefix" "" -- "$SQ" embed "$W/m.sqm" --input "$W/plain.txt" --prompt query
finish
