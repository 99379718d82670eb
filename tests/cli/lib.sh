# Shared helpers of the CLI test scripts (sourced). The caller sets W (its
# work directory) before calling expect_rc / expect_error.
fails=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; fails=$((fails + 1)); }

# expect_rc NAME RC NEEDLE OUTFILE -- command...: the command exits RC, its
# stderr contains NEEDLE, OUTFILE (if given) and temp files are not left.
expect_rc() {
  local name=$1 want=$2 needle=$3 out=$4
  shift 5
  local msg rc
  msg=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne $want ]]; then fail "$name: exit $rc, want $want ($msg)"; return; fi
  if [[ "$msg" != *"$needle"* ]]; then fail "$name: message '$msg' lacks '$needle'"; return; fi
  if [[ -n "$out" && -e "$out" ]]; then fail "$name: left $out behind"; return; fi
  if ls "$W"/*.tmp.* >/dev/null 2>&1; then fail "$name: left a temp file"; return; fi
  pass "$name"
}

# expect_error NAME NEEDLE OUTFILE -- command...: bad input, exit 2.
expect_error() {
  local name=$1 needle=$2 out=$3
  shift 3
  expect_rc "$name" 2 "$needle" "$out" "$@"
}

finish() {
  echo "$fails failure(s)"
  [[ $fails -eq 0 ]]
}
