#!/usr/bin/env bash
# sentence-transformers layouts as sentence-transformers reads them:
# max_seq_length of sentence_bert_config.json truncates (below the model's
# positions and the tokenizer's limit), the Transformer module's folder
# (modules.json "path": "0_Transformer") holds config, weights and
# tokenizer, a square Dense module (Tanh / Identity) runs as in
# sentence-transformers, a module squint cannot run is refused by name, and a
# cross-encoder / classifier checkpoint is never embedded.
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

# 3. Dense modules (square, Tanh or Identity) run as sentence-transformers
# runs them: normalize(act(p W^T + b)) on the pooled vector, checked against
# NumPy on squint's own pooled vectors; what squint cannot run is refused.
dense() {  # DIR ACTIVATION IN OUT [weights-file-name]
  cp -r "$W/m" "$1"
  /usr/bin/python3 - "$1" "$2" "$3" "$4" "${5:-model.safetensors}" <<'PY'
import json, os, struct, sys
import numpy as np
d, act, fin, fout, wname = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
m = json.load(open(os.path.join(d, "modules.json")))
m.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
json.dump(m, open(os.path.join(d, "modules.json"), "w"))
os.makedirs(os.path.join(d, "2_Dense"))
json.dump({"in_features": fin, "out_features": fout, "bias": True, "activation_function": act},
          open(os.path.join(d, "2_Dense", "config.json"), "w"))
rng = np.random.default_rng(4)
W = (rng.standard_normal((fout, fin)) * 0.3).astype("<f4"); b = (rng.standard_normal(fout) * 0.1).astype("<f4")
hdr = {"linear.weight": {"dtype": "F32", "shape": [fout, fin], "data_offsets": [0, W.nbytes]},
       "linear.bias": {"dtype": "F32", "shape": [fout], "data_offsets": [W.nbytes, W.nbytes + b.nbytes]}}
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
with open(os.path.join(d, "2_Dense", wname), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + W.tobytes() + b.tobytes())
PY
}
H=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['hidden_size'])" "$W/m/config.json")
"$SQ" embed "$W/m" --input "$W/in.txt" --no-normalize --output "$W/pooled.npy" --quiet
for act in Tanh Identity; do
  dense "$W/dense-$act" "torch.nn.modules.activation.$act" "$H" "$H"
  [[ $act == Identity ]] && sed -i 's/torch.nn.modules.activation.Identity/torch.nn.modules.linear.Identity/' "$W/dense-$act/2_Dense/config.json"
  "$SQ" embed "$W/dense-$act" --input "$W/in.txt" --output "$W/dense-$act.npy" --quiet 2>"$W/dense.err" &&
  /usr/bin/python3 - "$W/pooled.npy" "$W/dense-$act.npy" "$W/dense-$act/2_Dense/model.safetensors" "$act" <<'PY' &&
import json, struct, sys
import numpy as np
p = np.load(sys.argv[1]).astype(np.float64); got = np.load(sys.argv[2]).astype(np.float64)
raw = open(sys.argv[3], "rb").read(); n = struct.unpack("<Q", raw[:8])[0]; hdr = json.loads(raw[8:8 + n])
def t(name):
    a, b = hdr[name]["data_offsets"]
    return np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(hdr[name]["shape"]).astype(np.float64)
y = p @ t("linear.weight").T + t("linear.bias")
if sys.argv[4] == "Tanh":
    y = np.tanh(y)
y /= np.linalg.norm(y, axis=1, keepdims=True)
d = np.abs(y - got).max()
print("   Dense %s: max |squint - NumPy| %.2e" % (sys.argv[4], d))
sys.exit(0 if d < 1e-5 else 1)
PY
  pass "Dense module with $act: normalize(act(p W^T + b)), as sentence-transformers computes it" ||
    fail "Dense $act: $(cat "$W/dense.err")"
done
"$SQ" quantize "$W/dense-Tanh" -o "$W/dense.sqm" >/dev/null 2>&1 &&
  "$SQ" embed "$W/dense.sqm" --input "$W/in.txt" --output "$W/dense-q.npy" --quiet &&
  [[ $("$SQ" inspect "$W/dense.sqm") == *"pooling_head tanh"* ]] &&
  /usr/bin/python3 -c "
import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
c = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
print('   Dense in the .sqm: cosine int8 vs fp32 min %.4f' % c.min()); sys.exit(0 if c.min() > 0.99 else 1)" \
    "$W/dense-Tanh.npy" "$W/dense-q.npy" &&
  pass "the Dense head goes into the .sqm (pooling_head: tanh) and runs there" || fail "Dense in the .sqm"
dense "$W/dense-wide" torch.nn.modules.activation.Tanh "$H" 256
expect_error "a non-square Dense refused, naming its features" "from $H to 256 features" "" -- "$SQ" embed "$W/dense-wide" --input "$W/in.txt"
dense "$W/dense-relu" torch.nn.modules.activation.ReLU "$H" "$H"
expect_error "a Dense activation squint lacks refused by name" "torch.nn.modules.activation.ReLU" "" -- "$SQ" embed "$W/dense-relu" --input "$W/in.txt"
dense "$W/dense-bin" torch.nn.modules.activation.Tanh "$H" "$H" pytorch_model.bin
expect_error "a Dense module without safetensors refused" "pytorch_model.bin" "" -- "$SQ" embed "$W/dense-bin" --input "$W/in.txt"
cp -r "$W/m" "$W/other"
/usr/bin/python3 - "$W/other/modules.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m.insert(2, {"idx": 2, "name": "2", "path": "2_LayerNorm", "type": "sentence_transformers.models.LayerNorm"})
json.dump(m, open(sys.argv[1], "w"))
PY
expect_error "another module type refused by name" "sentence_transformers.models.LayerNorm" "" -- "$SQ" embed "$W/other" --input "$W/in.txt"

# 4. A cross-encoder is never embedded: a checkpoint whose config says
# BertForSequenceClassification but whose weights lack the classifier is
# refused naming the tensor; a real one (the fixture's) is refused by
# `embed` and scored by `rerank`; other task heads are refused by name.
cp -r "$W/m" "$W/ce"
/usr/bin/python3 - "$W/ce/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["architectures"] = ["BertForSequenceClassification"]; c["num_labels"] = 1
json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "classifier config without classifier weights refused" 'missing tensor "classifier.weight"' "" -- "$SQ" embed "$W/ce" --input "$W/in.txt"
expect_error "a classifier without its weights is not quantized" 'classifier.weight' "$W/ce.sqm" -- "$SQ" quantize "$W/ce" -o "$W/ce.sqm"
"$GEN" --cross-encoder 1 "$W/ce-real" >/dev/null
expect_error "a cross-encoder is not embedded" "not an embedding model" "" -- "$SQ" embed "$W/ce-real" --input "$W/in.txt"
cp -r "$W/m" "$W/tok"
/usr/bin/python3 - "$W/tok/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["architectures"] = ["BertForTokenClassification"]
json.dump(c, open(sys.argv[1], "w"))
PY
expect_error "a token classifier refused by name" "BertForTokenClassification" "" -- "$SQ" embed "$W/tok" --input "$W/in.txt"

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
