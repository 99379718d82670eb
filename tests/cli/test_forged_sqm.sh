#!/usr/bin/env bash
# Forged .sqm files: a hostile writer can recompute every checksum, so each
# lie below reaches the loader. `squint embed` must refuse each with exit 2
# naming the tensor (and write no output), `squint verify` must exit 1
# naming the same tensor (one set of model checks for both).
# usage: test_forged_sqm.sh SQUINT GEN_FIXTURE SQM_POKE
set -uo pipefail
SQ=$1
GEN=$2
POKE=$3
W=$(mktemp -d /tmp/squint-forged-XXXXXX)
trap 'rm -rf "$W"' EXIT
. "$(dirname "$0")/lib.sh"
export SOURCE_DATE_EPOCH=1764633600

"$GEN" "$W/m" --shape tiny --seed 4 --hidden 72 --heads 4 --ffn 200 --layers 2 >/dev/null || exit 1
"$SQ" calibrate "$W/m" --samples 32 --quiet -o "$W/m.sqc" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/int8.sqm" 2>/dev/null &&
  printf 'weights:\n  type: int4-g128\n' >"$W/int4.yaml" &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" --recipe "$W/int4.yaml" -o "$W/int4.sqm" 2>/dev/null ||
  { echo "building the real .sqm files failed"; exit 1; }
printf 'one text\nanother text\n' >"$W/t.txt"
"$SQ" embed "$W/int8.sqm" --input "$W/t.txt" --output "$W/good.npy" 2>/dev/null &&
  "$SQ" verify "$W/int8.sqm" >/dev/null && pass "the unaltered file embeds and verifies" ||
  fail "the unaltered file"

# forge NAME BASE TENSOR INDEX OP VALUE EXPECT_TENSOR [NEEDLE]
forge() {
  local name=$1 base=$2 tensor=$3 index=$4 op=$5 value=$6 want=$7 needle=${8:-}
  local f="$W/forged.sqm"
  rm -f "$f" "$W/out.npy"
  "$POKE" "$W/$base.sqm" "$f" "$tensor" "$index" "$op" "$value" || { fail "$name: sqm_poke"; return; }
  # The forged file passes the container's own integrity checks...
  local msg rc
  msg=$("$SQ" embed "$f" --input "$W/t.txt" --output "$W/out.npy" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne 2 || "$msg" != *"\"$want\""* || "$msg" != *"$needle"* ]]; then
    fail "$name: embed exit $rc, want 2 naming \"$want\" ($msg)"
  elif [[ -e "$W/out.npy" ]]; then
    fail "$name: embed left an output file"
  else
    pass "$name: embed refuses it: ${msg#*: }"
  fi
  msg=$("$SQ" verify "$f" 2>&1); rc=$?
  if [[ $rc -ne 1 || "$msg" != *"DAMAGED tensor \"$want\""* ]]; then
    fail "$name: verify exit $rc, want 1 naming \"$want\" ($msg)"
  else
    "$SQ" verify --json "$f" >"$W/v.json"
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['tensor']==sys.argv[2] and d['status']=='damaged' else 1)" "$W/v.json" "$want" &&
      pass "$name: verify names $want (text and --json)" || fail "$name: verify --json"
  fi
}

forge "wsum off by one"            int8 layer.0.qkv.wsum 5 --add 1 layer.0.qkv.wsum "panels sum to"
forge "wsum off by 1000"           int8 layer.1.ffn_down.wsum 70 --add 1000 layer.1.ffn_down.wsum
forge "wsum of a padding channel"  int8 layer.0.attn_out.wsum 75 --set-i32 3 layer.0.attn_out.wsum
forge "wsum near INT32_MAX"        int8 layer.0.ffn_up.wsum 0 --set-i32 2147483647 layer.0.ffn_up.wsum
forge "panel value -128"           int8 layer.1.ffn_up.weight 100 --set-i8 -128 layer.1.ffn_up.weight "-128"
# Two-step forgeries: the first lie made consistent with the second.
# qkv is [216, 72]: channel 216 is padding, lane 8 of panel 13 (row 13 * 18,
# byte 32 -> file byte 15008); its wsum is made to match the forged value.
"$POKE" "$W/int8.sqm" "$W/pad.sqm" layer.0.qkv.wsum 216 --set-i32 1 &&
  forge "non-zero channel padding (wsum matching)" pad layer.0.qkv.weight 15008 --set-i8 1 layer.0.qkv.weight "padding"
"$POKE" "$W/int8.sqm" "$W/big.sqm" layer.0.attn_out.scale 3 --set-f32 3e38 &&
  forge "act_scale x scale overflows" big layer.0.attn_out.act_scale 0 --set-f32 3e38 layer.0.attn_out.scale "output scale"
forge "weight scale NaN"           int8 layer.0.attn_out.scale 3 --set-f32 nan layer.0.attn_out.scale
forge "weight scale 0"             int8 layer.0.attn_out.scale 3 --set-f32 0 layer.0.attn_out.scale
forge "act_scale 1e-45"            int8 layer.1.attn_out.act_scale 0 --set-f32 1e-45 layer.1.attn_out.act_scale
forge "act_scale inf"              int8 layer.1.attn_out.act_scale 0 --set-f32 inf layer.1.attn_out.act_scale
forge "smooth 1e-38"               int8 layer.0.qkv.smooth 2 --set-f32 1e-38 layer.0.qkv.smooth
forge "act_zero 1000"              int8 layer.0.ffn_down.act_zero 0 --set-i32 1000 layer.0.ffn_down.act_zero
forge "act_zero INT32_MIN"         int8 layer.0.ffn_down.act_zero 0 --set-i32 -2147483648 layer.0.ffn_down.act_zero
# inspect shows what a file says, even a refused one (UBSan: z - 127 in int).
# It exits 1 (the model checks fail) but prints the linears.
for z in -2147483648 2147483647; do
  "$POKE" "$W/int8.sqm" "$W/z.sqm" layer.0.ffn_down.act_zero 0 --set-i32 $z || fail "sqm_poke"
  "$SQ" inspect "$W/z.sqm" >"$W/i.txt" 2>&1; r1=$?
  "$SQ" inspect --json "$W/z.sqm" >"$W/i.json" 2>&1; r2=$?
  [[ $r1 -le 1 && $r2 -le 1 ]] && grep -q "^layer.0.ffn_down .* $z " "$W/i.txt" &&
    pass "inspect shows act_zero $z without overflow (exit $r1)" ||
    fail "inspect act_zero $z: exit $r1/$r2: $(grep ffn_down "$W/i.txt" | head -2)"
done
forge "LayerNorm gamma NaN"        int8 layer.0.ln_attn.gamma 7 --set-f32 nan layer.0.ln_attn.gamma
forge "position table inf"         int8 embeddings.position 11 --set-f32 inf embeddings.position
forge "bias NaN"                   int8 layer.1.qkv.bias 0 --set-f32 nan layer.1.qkv.bias
forge "word scale NaN"             int8 embeddings.word.scale 200 --set-f32 nan embeddings.word.scale
forge "int4 group wsum"            int4 layer.1.ffn_down.wsum 3 --add -1 layer.1.ffn_down.wsum
forge "int4 nibble -8"             int4 layer.0.qkv.weight 17 --set-i8 -128 layer.0.qkv.weight "-8"
forge "int4 group scale inf"       int4 layer.0.ffn_up.scale 1 --set-f32 inf layer.0.ffn_up.scale
# A config with fewer layers than the file holds is refused, never run
# truncated: the .sqm (embed and verify) and the checkpoint folder.
"$POKE" "$W/int8.sqm" "$W/fewer.sqm" --replace "layers: 2" "layers: 1" || fail "sqm_poke layers"
expect_error ".sqm config with fewer layers: embed" "config describes fewer layers than the file holds" \
  "$W/out.npy" -- "$SQ" embed "$W/fewer.sqm" --input "$W/t.txt" --output "$W/out.npy"
msg=$("$SQ" verify "$W/fewer.sqm" 2>&1); rc=$?
[[ $rc -eq 1 && $msg == *'DAMAGED tensor "layer.1.'* ]] && pass ".sqm config with fewer layers: verify names a layer 1 tensor" ||
  fail ".sqm config with fewer layers: verify exit $rc ($msg)"
cp -r "$W/m" "$W/m1"
/usr/bin/python3 -c "import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['num_hidden_layers']=1; json.dump(d,open(p,'w'))" "$W/m1/config.json"
expect_error "checkpoint config with fewer layers: embed" "belongs to layer 1, but config.json num_hidden_layers is 1" \
  "$W/out.npy" -- "$SQ" embed "$W/m1" --input "$W/t.txt" --output "$W/out.npy"
finish
