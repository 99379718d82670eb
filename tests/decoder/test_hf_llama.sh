#!/usr/bin/env bash
# Hugging Face LlamaForCausalLM folders end to end ($SQUINT_SHARED_DATA; exit
# 77 skips without it, or without /usr/bin/python3):
#   - stories260K written in the HF layout (tests/fixture/llama2c_to_hf.py:
#     q/k rows permuted as transformers' converter does, tokenizer.json with
#     merges derived from the scores) gives the llama2.c file's logits
#     exactly, its greedy 256 tokens (reference-greedy-t0.txt) and its
#     perplexity; so does the newer Metaspace tokenizer.json; a folder
#     written without the permutation does not (the test can fail);
#   - the Llama 2 tokenizer.json (32000 pieces) gives llama.cpp's golden ids
#     and the llama2.c tokenizer's ids on the tinystories sample;
#   - calibrate + quantize int8 of the HF folder: verify OK, tokenizer type
#     hf-bpe, and the same generation as the quantized llama2.c model;
#   - hostile folders refused with exit 2, naming the file and the problem.
# usage: test_hf_llama.sh SQUINT DEC_LOGITS BPE_GOLDEN
set -u
SQ=$1 DL=$2 BG=$3
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../cli/lib.sh"
FX=$here/../fixture
PY=/usr/bin/python3
SD=${SQUINT_SHARED_DATA:-}
D=$SD/stories260K T=$SD/tinystories-sample/TinyStories-valid-head.txt
G=$SD/llamacpp-vocab-llama-spm/ggml-vocab-llama-spm.gguf
if [[ ! -f $D/stories260K.bin || ! -f $T || ! -f $SD/llama2c-tokenizer/tokenizer.bin ]]; then
  echo "SKIP: stories260K / tinystories-sample / llama2c-tokenizer not under \$SQUINT_SHARED_DATA"; exit 77
fi
[[ -x $PY ]] || { echo "SKIP: no $PY"; exit 77; }
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export SQUINT_WRITE_CHECK=1 SOURCE_DATE_EPOCH=0
conv() { $PY "$FX/llama2c_to_hf.py" "$@" >/dev/null; }
conv --tokenizer "$D/tok512.bin" --checkpoint "$D/stories260K.bin" "$W/hf" &&
conv --tokenizer "$D/tok512.bin" --checkpoint "$D/stories260K.bin" --metaspace "$W/hf-meta" &&
conv --tokenizer "$D/tok512.bin" --checkpoint "$D/stories260K.bin" --no-permute "$W/hf-noperm" &&
conv --tokenizer "$SD/llama2c-tokenizer/tokenizer.bin" "$W/l2" &&
conv --tokenizer "$SD/llama2c-tokenizer/tokenizer.bin" --metaspace "$W/l2-meta" ||
  { echo "FAIL: converter"; exit 1; }

# logits: the same numbers from both layouts
txt=$(sed -n 1p "$T")
"$DL" "$D/stories260K.bin" "$D/tok512.bin" "$txt" "$W/a.ids" "$W/a.f32" 7 &&
"$DL" "$W/hf" - "$txt" "$W/b.ids" "$W/b.f32" 7 &&
cmp -s "$W/a.ids" "$W/b.ids" && cmp -s "$W/a.f32" "$W/b.f32" \
  && pass "HF stories260K: same ids and bit-identical logits as the llama2.c file ($(wc -w <"$W/a.ids") tokens)" \
  || fail "HF stories260K logits differ from the llama2.c file"
"$DL" "$W/hf-noperm" - "$txt" "$W/c.ids" "$W/c.f32" 7
! cmp -s "$W/a.f32" "$W/c.f32" && pass "without the q/k permutation the logits differ" \
  || fail "the unpermuted folder gave the same logits"

# greedy 256 tokens from BOS == the reference, text and ids
sed -n 4p "$D/reference-greedy-t0.txt" >"$W/ref.ids"
tail -n +5 "$D/reference-greedy-t0.txt" >"$W/ref.txt"
for m in hf hf-meta; do
  "$SQ" generate "$W/$m" --ids --max-tokens 256 --threads 1 --quiet >"$W/ids" 2>"$W/err"
  cmp -s "$W/ids" "$W/ref.ids" && pass "$m: greedy 256 tokens == reference-greedy-t0.txt" \
    || fail "$m greedy ids differ: $(cat "$W/err")"
done
"$SQ" generate "$W/hf" --max-tokens 256 --threads 1 2>/dev/null >"$W/txt"
cmp -s "$W/txt" "$W/ref.txt" && pass "HF stories260K: greedy text == reference" || fail "greedy text differs"
"$SQ" generate "$W/hf-noperm" --ids --max-tokens 256 --threads 1 --quiet >"$W/ids" 2>/dev/null
! cmp -s "$W/ids" "$W/ref.ids" && pass "without the q/k permutation the greedy tokens differ" \
  || fail "the unpermuted folder reproduced the reference"
ppl() { "$SQ" perplexity "$1" --input "$T" --threads 1 --json 2>/dev/null | sed -n 's/.*"perplexity": *\([0-9.]*\).*/\1/p'; }
p1=$(ppl "$D/stories260K.bin") p2=$(ppl "$W/hf")
[[ -n $p1 && $p1 == "$p2" ]] && pass "perplexity on tinystories-sample: $p2 (llama2.c: $p1)" \
  || fail "perplexity $p2 vs llama2.c $p1"

# the Llama 2 tokenizer.json: llama.cpp's golden ids, and the llama2.c tokenizer's ids
for t in l2 l2-meta; do
  if [[ -f $G.inp ]]; then
    "$BG" golden "$W/$t/tokenizer.json" "$G.inp" "$G.out" >"$W/out" 2>&1 \
      && pass "$t: $(sed 's/.*: //' "$W/out")" || fail "$t golden: $(tail -5 "$W/out")"
  fi
  "$BG" same "$W/$t/tokenizer.json" "$SD/llama2c-tokenizer/tokenizer.bin" "$T" >"$W/out" 2>&1 \
    && pass "$t == tokenizer.bin (tinystories lines, whole file, 2000 mixes)" || fail "$t vs tokenizer.bin: $(tail -4 "$W/out")"
done
"$BG" same "$W/hf/tokenizer.json" "$D/tok512.bin" "$T" >"$W/out" 2>&1 \
  && pass "tok512 tokenizer.json == tok512.bin" || fail "tok512: $(tail -4 "$W/out")"

# calibrate + quantize the HF folder; the same generation as the llama2.c model's
head -n 9 "$T" >"$W/calib.txt"
for m in "$D/stories260K.bin" "$W/hf"; do
  n=$(basename "$m" .bin)
  "$SQ" calibrate "$m" --corpus "$W/calib.txt" --samples 0 --window --threads 1 --quiet -o "$W/$n.sqc" 2>"$W/err" &&
  "$SQ" quantize "$m" --calib "$W/$n.sqc" --recipe "$here/../../recipes/stories260K-int8.yaml" \
      -o "$W/$n.sqm" --threads 1 --json >/dev/null 2>"$W/err" || fail "quantize $n: $(cat "$W/err")"
  "$SQ" generate "$W/$n.sqm" --ids --max-tokens 256 --threads 1 --quiet >"$W/$n.gen" 2>>"$W/err"
  "$SQ" generate "$W/$n.sqm" --ids --prompt "$(sed -n 3p "$T")" --max-tokens 64 --threads 1 --quiet >"$W/$n.gen2" 2>>"$W/err"
done
"$SQ" verify "$W/hf.sqm" >/dev/null 2>&1 && pass "verify the HF int8 .sqm" || fail "verify hf.sqm"
"$SQ" inspect "$W/hf.sqm" 2>/dev/null | grep -q "hf-bpe" && pass "inspect shows tokenizer type hf-bpe" \
  || fail "inspect: no hf-bpe"
[[ -s $W/hf.gen ]] && cmp -s "$W/hf.gen" "$W/stories260K.gen" && cmp -s "$W/hf.gen2" "$W/stories260K.gen2" \
  && pass "int8 .sqm of the HF folder generates the same as the llama2.c one's (BOS and a story prompt)" \
  || fail "int8 generations differ"
p3=$(ppl "$W/stories260K.sqm") p4=$(ppl "$W/hf.sqm")
[[ -n $p3 && $p3 == "$p4" ]] && pass "int8 perplexity: $p4 (llama2.c int8: $p3)" || fail "int8 perplexity $p4 vs $p3"
rm -rf "$W/hf" "$W/hf-noperm" # the .sqm runs without its folder
"$SQ" generate "$W/hf.sqm" --ids --max-tokens 256 --threads 1 --quiet >"$W/gen3" 2>/dev/null
cmp -s "$W/gen3" "$W/hf.gen" && pass "the HF .sqm runs without the folder" || fail "hf.sqm needs its folder"

# hostile folders: exit 2, the file and the problem named
mk() { rm -rf "$W/bad"; cp -r "$W/hf-meta" "$W/bad"; }
edit() { $PY -c "import json,sys; p=sys.argv[1]; d=json.load(open(p)); exec(sys.argv[2]); json.dump(d, open(p,'w'))" "$@"; }
mk; edit "$W/bad/config.json" 'd["rope_scaling"]={"type":"linear","factor":2.0}'
expect_error "rope_scaling refused" "$W/bad/config.json: rope_scaling is set" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["num_hidden_layers"]-=1'
expect_error "a config with fewer layers than the weights" "the config describes fewer layers than the weights hold" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["attention_bias"]=True'
expect_error "attention_bias refused" "attention_bias is true" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["hidden_act"]="gelu"'
expect_error "hidden_act refused" "hidden_act \"gelu\" is not supported" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["architectures"]=["MistralForCausalLM"]; d["model_type"]="mistral"'
expect_error "another causal LM refused by name" "architectures \"MistralForCausalLM\" is not supported" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["tie_word_embeddings"]=False'
expect_error "untied without lm_head" "missing tensor \"lm_head.weight\"" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["num_key_value_heads"]=3'
expect_error "heads not a multiple of kv heads" "not a multiple of num_key_value_heads 3" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/config.json" 'd["num_key_value_heads"]=8'
expect_error "k_proj of the wrong shape" "self_attn.k_proj.weight\" has shape [32, 64], expected [64, 64]" "" -- "$SQ" generate "$W/bad"
# issue 38 item 9: a broken config.json was "not a regular file"
mk; printf '{"architectures": ["LlamaForCausalLM"' >"$W/bad/config.json"
expect_error "broken config.json named by generate" "$W/bad/config.json: invalid JSON" "" -- "$SQ" generate "$W/bad"
expect_error "broken config.json named by perplexity" "$W/bad/config.json: invalid JSON" "" -- "$SQ" perplexity "$W/bad" --input "$W/calib.txt"
mk; rm "$W/bad/config.json"
expect_error "a folder without config.json" "$W/bad/config.json: cannot open" "" -- "$SQ" generate "$W/bad"
mk; truncate -s 100000 "$W/bad/model.safetensors"
expect_error "truncated safetensors" "$W/bad/model.safetensors" "" -- "$SQ" generate "$W/bad"
mk; rm "$W/bad/tokenizer.json"
expect_error "no tokenizer.json" "$W/bad: no tokenizer.json" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/tokenizer.json" 'd["model"]["merges"].append(["a","<unk>"])'
expect_error "a merge making no piece" "makes no piece of the vocabulary" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/tokenizer.json" 'd["model"]["merges"].append(["zz","q"])'
expect_error "a merge of an unknown piece" "\"zz\" is not in the vocabulary" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/tokenizer.json" 'd["pre_tokenizer"]={"type":"ByteLevel","add_prefix_space":False}'
# a ByteLevel pre-tokenizer makes it the byte-level kind, which refuses the
# Llama file's Metaspace decoder by name
expect_error "ByteLevel refused" "decoder Metaspace is not supported for a byte-level BPE" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/tokenizer.json" 'd["model"]["type"]="Unigram"'
expect_error "Unigram refused" "model.type Unigram is not supported" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/tokenizer.json" 'd["model"]["vocab"]["zz"]=900'
expect_error "a gap in the ids" "has no piece" "" -- "$SQ" generate "$W/bad"
mk; edit "$W/bad/tokenizer.json" 'd["model"]["dropout"]=0.1'
expect_error "BPE dropout refused" "model.dropout is set" "" -- "$SQ" generate "$W/bad"
finish
