#!/usr/bin/env bash
# Qwen3ForCausalLM end to end on the tiny fixture (gen_qwen3_fixture.py, the
# real Qwen3 tokenizer from $SQUINT_SHARED_DATA/qwen3-tokenizer; exit 77
# without it or without /usr/bin/python3 + numpy):
#   - generate from the folder: text, the same bytes at 1 and 2 threads;
#   - config.json refusals by name (use_sliding_window, rope_scaling,
#     attention_bias, layer_types) and a missing q_norm tensor named;
#   - calibrate + quantize int8 (recipes/qwen3-int8.yaml): verify OK, the .sqm
#     bytes the same at 1 and 2 threads, its tokenizer hf-bytelevel with the
#     folder's ids, generate from it (the same bytes at 1 and 2 threads);
#   - forged hf-bytelevel tokenizers (sqm_poke: merges out of range or not
#     making a piece, added rows with a bad id or flag, a vocab_size or a
#     pattern the tensors do not fit) refused by generate and verify, naming
#     the file;
#   - serve: POST /v1/completions gives the text of squint generate (skipped
#     without libmicrohttpd).
# usage: test_qwen3.sh SQUINT DEC_LOGITS SQM_POKE
set -uo pipefail
SQ=$1
DL=$2
POKE=$3
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
T=${SQUINT_SHARED_DATA:-}/qwen3-tokenizer
[[ -f $T/tokenizer.json && -f $T/tokenizer_config.json ]] || { echo "SKIP: qwen3-tokenizer not found"; exit 77; }
$PY -c "import numpy" 2>/dev/null || { echo "SKIP: $PY has no numpy"; exit 77; }
W=$(mktemp -d /tmp/squint-qwen3-XXXXXX)
SPID=""
trap '[[ -n $SPID ]] && kill $SPID 2>/dev/null; rm -rf "$W"' EXIT
rc=0
ok() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; rc=1; }
M=$W/tiny
$PY "$here/../fixture/gen_qwen3_fixture.py" --shape tiny --tokenizer-dir "$T" "$M" >/dev/null || { echo "FAIL: fixture"; exit 1; }
P="The capital of France is"

# generate from the folder, 1 and 2 threads
for t in 1 2; do
  "$SQ" generate "$M" --prompt "$P" --max-tokens 24 --threads $t --quiet >"$W/g$t.txt" 2>"$W/err" ||
    fail "generate --threads $t: $(cat "$W/err")"
done
if [[ -s $W/g1.txt ]] && cmp -s "$W/g1.txt" "$W/g2.txt"; then ok "generate: $(wc -c <"$W/g1.txt") bytes of text, the same at 1 and 2 threads"
else fail "generate: empty or thread-dependent"; fi

# refusals by name
refuse() { # KEY JSON-EDIT NEEDLE
  rm -rf "$W/bad"; cp -r "$M" "$W/bad"
  $PY -c "import json,sys; c=json.load(open(sys.argv[1])); $2; json.dump(c, open(sys.argv[1],'w'))" "$W/bad/config.json"
  if "$SQ" generate "$W/bad" --max-tokens 2 >/dev/null 2>"$W/err"; then fail "$1: accepted"
  elif grep -q "$3" "$W/err"; then ok "$1 refused: $(head -1 "$W/err")"
  else fail "$1: $(cat "$W/err")"; fi
}
refuse use_sliding_window "c['use_sliding_window']=True; c['sliding_window']=4096" "use_sliding_window is true"
refuse rope_scaling "c['rope_scaling']={'rope_type':'yarn','factor':4.0}" "rope_scaling is set"
refuse attention_bias "c['attention_bias']=True" "attention_bias is true"
refuse layer_types "c['layer_types']=['full_attention','sliding_attention']" "layer_types\[1\]"
refuse head_dim "c['head_dim']=31" "head_dim 31 is odd"
# the sliding_window width alone (use_sliding_window false) is ignored, as transformers does
rm -rf "$W/sw"; cp -r "$M" "$W/sw"
$PY -c "import json,sys; c=json.load(open(sys.argv[1])); c['sliding_window']=4096; json.dump(c, open(sys.argv[1],'w'))" "$W/sw/config.json"
"$SQ" generate "$W/sw" --prompt "$P" --max-tokens 24 --threads 1 --quiet >"$W/sw.txt" 2>"$W/err" && cmp -s "$W/sw.txt" "$W/g1.txt" &&
  ok "sliding_window with use_sliding_window false: runs, the same text" || fail "sliding_window: $(cat "$W/err")"
rm -rf "$W/nq"; cp -r "$M" "$W/nq"
$PY - "$W/nq/model.safetensors" <<'PYEOF'
import json, struct, sys
p = sys.argv[1]
raw = open(p, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
h["model.layers.1.self_attn.q_nrm.weight"] = h.pop("model.layers.1.self_attn.q_norm.weight")
b = json.dumps(h, separators=(",", ":")).encode()
b += b" " * ((8 - len(b) % 8) % 8)
open(p, "wb").write(struct.pack("<Q", len(b)) + b + raw[8 + n:])
PYEOF
if "$SQ" generate "$W/nq" --max-tokens 2 >/dev/null 2>"$W/err"; then fail "missing q_norm: accepted"
elif grep -q 'model.layers.1.self_attn.q_norm.weight' "$W/err"; then ok "missing q_norm named: $(head -1 "$W/err")"
else fail "missing q_norm: $(cat "$W/err")"; fi

# calibrate + quantize int8 -> .sqm
printf '%s\n' "Once upon a time, there was a little girl named Lily." "She loved to play outside. 你好，世界！" \
  "def f(x):    return x * 2  # <think>why</think>" >"$W/calib.txt"
"$SQ" calibrate "$M" --corpus "$W/calib.txt" --samples 0 --window --threads 1 --quiet -o "$W/q.sqc" 2>"$W/err" ||
  fail "calibrate: $(cat "$W/err")"
for t in 1 2; do
  "$SQ" quantize "$M" --calib "$W/q.sqc" --recipe "$here/../../recipes/qwen3-int8.yaml" \
    -o "$W/q$t.sqm" --threads $t --json >/dev/null 2>"$W/err" || fail "quantize --threads $t: $(cat "$W/err")"
done
cmp -s "$W/q1.sqm" "$W/q2.sqm" && ok "quantize int8: the .sqm bytes the same at 1 and 2 threads" || fail "quantize: thread-dependent .sqm"
"$SQ" verify "$W/q1.sqm" >"$W/v.txt" 2>&1 && ok "verify: $(head -1 "$W/v.txt")" || fail "verify: $(cat "$W/v.txt")"
"$SQ" inspect "$W/q1.sqm" 2>&1 | grep -q "type hf-bytelevel, vocab_size 151669" &&
  ok "inspect: tokenizer hf-bytelevel, 151669 pieces under 151936 rows" || fail "inspect: no hf-bytelevel tokenizer"
TXT="Hello <|im_start|>user\n你好 <think>ok</think> café  e\u0301 123456 it's"
"$DL" "$M" - "$TXT" "$W/a.ids" "$W/a.l" 7 && "$DL" "$W/q1.sqm" - "$TXT" "$W/b.ids" "$W/b.l" 7 &&
  cmp -s "$W/a.ids" "$W/b.ids" && ok "the .sqm tokenizer gives the folder's ids ($(wc -w <"$W/a.ids") ids)" ||
  fail "the .sqm tokenizer's ids differ from the folder's"
# no BOS: Qwen3's tokenizer.json post-processor is ByteLevel alone, so
# transformers puts nothing before a text (config.json's bos_token_id is
# never added); "Hello world" is [9707, 1879], folder and .sqm alike
for m in "$M" "$W/q1.sqm"; do
  "$DL" "$m" - "Hello world" "$W/hw.ids" "$W/hw.l" 7 && [[ $(cat "$W/hw.ids") == "9707 1879" ]] &&
    ok "no BOS before a text ($(basename "$m")): $(cat "$W/hw.ids")" ||
    fail "BOS: $(basename "$m") gives $(cat "$W/hw.ids" 2>/dev/null)"
done
"$SQ" inspect --json "$W/q1.sqm" >"$W/i.json" 2>&1 && grep -q '"single_prefix": \[\]' "$W/i.json" &&
  ok ".sqm: tokenizer.single_prefix [] (SQM.md 10.5)" || fail ".sqm: no empty single_prefix"
for t in 1 2; do
  "$SQ" generate "$W/q1.sqm" --prompt "$P" --max-tokens 24 --threads $t --quiet >"$W/s$t.txt" 2>"$W/err" ||
    fail "generate .sqm --threads $t: $(cat "$W/err")"
done
if [[ -s $W/s1.txt ]] && cmp -s "$W/s1.txt" "$W/s2.txt"; then ok "generate from the int8 .sqm: $(wc -c <"$W/s1.txt") bytes, the same at 1 and 2 threads"
else fail "generate .sqm: empty or thread-dependent"; fi

# forged tokenizers: refused by generate and by verify, the file named
forged() { # WHAT POKE-ARGS...
  local what=$1; shift
  "$POKE" "$W/q1.sqm" "$W/f.sqm" "$@" 2>"$W/err" || { fail "sqm_poke $what: $(cat "$W/err")"; return; }
  if "$SQ" generate "$W/f.sqm" --max-tokens 2 >/dev/null 2>"$W/err"; then fail "$what: generate accepts it"
  elif ! grep -q "f.sqm" "$W/err"; then fail "$what: the message names no file: $(cat "$W/err")"
  elif "$SQ" verify "$W/f.sqm" >/dev/null 2>&1; then fail "$what: verify accepts it"
  else ok "$what refused: $(head -1 "$W/err" | sed "s|$W/||")"; fi
}
forged "a merge id out of range" tokenizer.merges 0 --set-i32 99999999
forged "a merge that makes no piece" tokenizer.merges 1 --set-i32 151668
forged "an added token id out of range" tokenizer.added 0 --set-i32 -1
forged "an added token flag 2" tokenizer.added 1 --set-i32 2
forged "vocab_size one less than the pieces" --replace "vocab_size: 151669" "vocab_size: 151668"
forged "an unknown pattern" --replace "pattern: qwen2" "pattern: qwen9"
forged "nfc not a bool" --replace "nfc: true" "nfc: tru3"

# serve /v1/completions
if [[ $("$SQ" serve x 2>&1) == *"built without libmicrohttpd"* ]]; then
  echo "skip - serve: squint was built without libmicrohttpd"
else
  "$SQ" serve "$M" --port 0 --threads 1 >"$W/serve.log" 2>&1 &
  SPID=$!
  URL=""
  for _ in $(seq 1 600); do
    URL=$(grep -o 'listening on http://[^ ]*' "$W/serve.log" | head -1 | sed 's/listening on //')
    [[ -n $URL ]] && break
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.05
  done
  if [[ -z $URL ]]; then fail "serve did not start: $(tail -2 "$W/serve.log")"
  elif $PY - "$URL" "$P" "$W/g1.txt" <<'PYEOF'
import json, sys, urllib.request
url, prompt, want = sys.argv[1], sys.argv[2], open(sys.argv[3], encoding="utf-8").read()
req = urllib.request.Request(url + "/v1/completions", method="POST",
                             data=json.dumps({"prompt": prompt, "max_tokens": 24}).encode(),
                             headers={"Content-Type": "application/json"})
r = json.load(urllib.request.urlopen(req, timeout=60))
got = r["choices"][0]["text"]
assert got + "\n" == want or got == want, (got, want)
assert r["usage"]["completion_tokens"] == 24, r["usage"]
PYEOF
  then ok "serve: POST /v1/completions gives the text of squint generate"
  else fail "serve: /v1/completions"; fi
  kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=""
fi
exit $rc
