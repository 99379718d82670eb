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

# start_serve NAME ARGS...: `$SQ serve ARGS` in the background, logging to
# $W/NAME.log; sets URL (empty when it did not start) and PID, and adds PID
# to the caller's pids array (its cleanup kills them). Call it in the
# script's own shell, not in $(...): a subshell's pids+= is lost and the
# server outlives the test. Waits SERVE_WAIT_TRIES x 50 ms (default 1200)
# for the "listening on" line; 1 when the server did not start.
start_serve() {
  local name=$1
  shift
  "$SQ" serve "$@" >"$W/$name.log" 2>&1 &
  PID=$!
  pids+=("$PID")
  URL=""
  for _ in $(seq 1 "${SERVE_WAIT_TRIES:-1200}"); do
    URL=$(grep -o 'listening on http://[^ ]*' "$W/$name.log" | head -1 | sed 's/listening on //')
    [[ -n $URL ]] && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}
