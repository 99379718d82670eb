#!/usr/bin/env bash
# The rooms stay apart (docs/design.md "Layout"):
#  1. no runtime source (base, formats, tokenizers, libquant, decoder,
#     heads, serve, libsquint) includes a header of the toolchain (calib, quantize, eval)
#     or of cmd/, and each room includes only rooms below it;
#  2. no command file serves another as a library: cmd/cmd_NAME.c defines
#     no external function but cmd_NAME (commands share code through cmd/
#     helpers that are not commands, or through the rooms);
#  3. text becomes ids through the one tokenizer interface (tokenizer.h):
#     a kind's own header only in tokenizers/ and the .sqm tokenizer code;
#  4. libsquint.so defines no recipe, SmoothQuant, GPTQ, calibration or
#     quantizer symbol (all of its symbols, not only the exported ones).
# usage: check_layers.sh SOURCE_ROOT LIBSQUINT_SO
set -u
root=$1 so=$2
fails=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; fails=$((fails + 1)); }

# Each room and the rooms it may include from (itself always allowed).
# libquant's folders are rooms of their own, in this order bottom up.
LQ="libquant/cpu libquant/kernels libquant/weights libquant/model libquant/sqm libquant/run"
declare -A below=(
  [base]=""
  [formats]="base"
  [tokenizers]="base formats"
  [libquant/cpu]="base formats tokenizers"
  [libquant/kernels]="base formats tokenizers libquant/cpu"
  [libquant/weights]="base formats tokenizers libquant/cpu libquant/kernels"
  [libquant/model]="base formats tokenizers libquant/cpu libquant/kernels libquant/weights"
  [libquant/sqm]="base formats tokenizers libquant/cpu libquant/kernels libquant/weights libquant/model"
  [libquant/run]="base formats tokenizers $LQ"
  [decoder]="base formats tokenizers $LQ"
  [heads]="base formats tokenizers $LQ"
  [serve]="base formats tokenizers $LQ decoder heads"
  [libsquint]="base formats tokenizers $LQ include"
  [calib]="base formats tokenizers $LQ decoder"
  [quantize]="base formats tokenizers $LQ decoder calib"
  [eval]="base formats tokenizers $LQ decoder heads calib quantize"
)
room_name() { # path relative to root -> its room
  case $1 in libquant/*/*) local r=${1#libquant/}; echo "libquant/${r%%/*}" ;; *) echo "${1%%/*}" ;; esac
}
# header name -> room (headers are included by name; names are unique)
declare -A room_of=()
while IFS= read -r h; do
  rel=${h#"$root"/}
  room=$(room_name "$rel")
  name=$(basename "$h")
  if [[ -n ${room_of[$name]:-} && ${room_of[$name]} != "$room" ]]; then
    fail "header name $name is in two rooms (${room_of[$name]}, $room)"
  fi
  room_of[$name]=$room
done < <(find "$root"/{base,formats,tokenizers,libquant,decoder,heads,serve,libsquint,calib,quantize,eval,cmd,include} \
           -name '*.h' -o -name '*.inc' | sort)

bad=0
for room in "${!below[@]}"; do
  allowed=" $room ${below[$room]} "
  while IFS= read -r src; do
    while IFS= read -r inc; do
      r=${room_of[$inc]:-}
      [[ -z $r ]] && continue # system, generated (squint_version.h) or test-only
      if [[ $allowed != *" $r "* ]]; then
        fail "${src#"$root"/} ($room) includes $inc ($r)"
        bad=$((bad + 1))
      fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$src" | xargs -rn1 basename)
  done < <(find "$root/$room" \( -name '*.c' -o -name '*.h' -o -name '*.inc' \) -print |
           while IFS= read -r f; do [[ $(room_name "${f#"$root"/}") == "$room" ]] && echo "$f"; done)
done
[[ $bad -eq 0 ]] && pass "every room includes only itself and the rooms below it"

# One tokenizer interface: outside tokenizers/ only tokenizer.h is used; a
# kind's own header only where its .sqm form is read or written.
kinds=""
while IFS= read -r f; do
  rel=${f#"$root"/}
  case $rel in tokenizers/*|libquant/sqm/sqm_tokenizer.c|quantize/dec_sqm_write.c) continue ;; esac
  grep -qE '#[[:space:]]*include[[:space:]]*"tokenizer_(bpe|unigram|wordpiece|bytelevel)\.h"' "$f" && kinds+="$rel "
done < <(find "$root"/{base,formats,tokenizers,libquant,decoder,heads,serve,libsquint,calib,quantize,eval,cmd} \
           -name '*.c' -o -name '*.h')
[[ -z $kinds ]] && pass "outside tokenizers/, text becomes ids only through tokenizer.h" ||
  fail "a tokenizer kind's header used directly in: $kinds"

# a command file defines one external function, its entry point cmd_NAME
lib=""
for f in "$root"/cmd/cmd_*.c; do
  want=$(basename "$f" .c)
  while IFS= read -r fn; do
    [[ $fn != "$want" ]] && lib+="${f#"$root"/}:$fn "
  done < <(grep -E '^[a-z_][a-z0-9_ *]*[ *][a-z_][a-z0-9_]*\(' "$f" | grep -v '^static' |
           sed -E 's/^[a-z_][a-z0-9_ *]*[ *]([a-z_][a-z0-9_]*)\(.*/\1/')
done
[[ -z $lib ]] && pass "each command file defines only its command (no command serves another as a library)" ||
  fail "command files that define more than their command: $lib"

if [[ ! -f $so ]]; then
  fail "$so not found"
else
  # every symbol the library defines (local ones included: the code linked in)
  syms=$(nm --defined-only "$so" | awk '{print $3}')
  n=$(grep -cE '^sq_' <<<"$syms")
  tool=$(grep -E '^sq_(recipe|smooth|gptq|calib|plan_|keep_|quantize_(model|weights|log|report)|dec_quantize|dec_calib|select_outliers|embed_quant|sqc_|act_stats|histogram|scale_select|corpus|qlinear_error|ref_linear_error|gate_|linear_name)' <<<"$syms")
  if [[ $n -lt 100 ]]; then fail "nm found only $n sq_ symbols in $so: stripped? the check cannot see"
  elif [[ -n $tool ]]; then fail "libsquint.so carries toolchain code: $(tr '\n' ' ' <<<"$tool")"
  else pass "libsquint.so: $n sq_ symbols, none of the recipe, quantizer or calibration"; fi
  exported=$(nm -D --defined-only "$so" | awk '$3 !~ /^(squint_|SQUINT_)/ {print $3}')
  [[ -z $exported ]] && pass "libsquint.so exports only squint_* symbols" ||
    fail "libsquint.so exports: $(tr '\n' ' ' <<<"$exported")"
fi
echo "$fails failure(s)"
[[ $fails -eq 0 ]]
