#!/usr/bin/env bash
# squint serve with a causal LM ($SQUINT_SHARED_DATA/stories260K; exit 77
# skips without it or without libmicrohttpd): POST /v1/completions whole and
# streamed (tests/cli/serve_completions_checks.py does the HTTP side with
# Python's standard library): greedy text the bytes of `squint generate`,
# the streamed pieces joined the same text, finish_reason and usage, stop
# strings, seeded sampling, 8 concurrent clients, hostile bodies 400, clients
# leaving mid-stream, --draft, encoder endpoints refused on a decoder and
# completions on an encoder; curl as a user would; SIGTERM exits 0.
# usage: test_serve_completions.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONDONTWRITEBYTECODE=1
D=${SQUINT_SHARED_DATA:-}/stories260K
if [[ ! -f $D/stories260K.bin || ! -f $D/tok512.bin ]]; then
  echo "SKIP: stories260K not found under \$SQUINT_SHARED_DATA"; exit 77
fi
if [[ $("$SQ" serve x 2>&1) == *"built without libmicrohttpd"* ]]; then
  echo "SKIP: squint was built without libmicrohttpd"; exit 77
fi
M=$D/stories260K.bin
W=$(mktemp -d /tmp/squint-serve-cmpl-XXXXXX)
pids=()
. "$(dirname "$0")/lib.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap cleanup EXIT
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
rc=0

# start NAME ARGS...: `squint serve ARGS` on a free port (lib.sh start_serve,
# 30 s to listen); sets URL and PID, or the test fails here.
start() {
  SERVE_WAIT_TRIES=600 start_serve "$@" && return 0
  echo "FAIL - server $1 did not start: $(tail -2 "$W/$1.log")"
  exit 1
}
"$GEN" "$W/enc" --shape tiny --seed 5 >/dev/null || { echo "FAIL - fixture"; exit 1; }
# 16 slots for the 8 concurrent clients: a slot is freed when its generation
# thread ends, which can lag the response under load (a 503 there is the
# server keeping its limit, not a defect).
start main "$M" --port 0 --threads 1 --max-generations 16
MAIN=$URL MPID=$PID
start draft "$M" --port 0 --quiet --threads 1 --draft "$M" --draft-tokens 3
DRAFT=$URL
start enc "$W/enc" --port 0 --quiet
ENC=$URL

"$PY" "$HERE/serve_completions_checks.py" "$SQ" "$M" "$MAIN" "$DRAFT" "$ENC" || rc=1

# curl, as a user would
if command -v curl >/dev/null; then
  "$SQ" generate "$M" --prompt "Once upon a time" --max-tokens 24 --threads 1 --quiet >"$W/gen.txt"
  curl -sf "$MAIN/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "Once upon a time", "max_tokens": 24}' -o "$W/curl.json" &&
    "$PY" -c "import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))['choices'][0]['text'] + '\n')" \
      "$W/curl.json" >"$W/curl.txt"
  if cmp -s "$W/curl.txt" "$W/gen.txt"; then echo "ok   - curl POST /v1/completions: the text of squint generate"
  else echo "FAIL - curl POST /v1/completions: $(cat "$W/curl.json")"; rc=1; fi
  curl -sfN "$MAIN/v1/completions" -d '{"prompt": "Once upon a time", "max_tokens": 24, "stream": true}' \
    -o "$W/curl.sse"
  if "$PY" -c "
import json, sys
ev = open(sys.argv[1], encoding='utf-8').read().split('\n\n')
assert ev[-1] == '' and ev[-2] == 'data: [DONE]', ev[-2:]
chunks = [json.loads(e[6:]) for e in ev[:-2]]
sys.stdout.write(''.join(c['choices'][0]['text'] for c in chunks) + '\n')" "$W/curl.sse" >"$W/sse.txt" &&
     cmp -s "$W/sse.txt" "$W/gen.txt"; then
    echo "ok   - curl -N streamed: the events joined are the text of squint generate"
  else echo "FAIL - curl streamed: $(head -c 400 "$W/curl.sse")"; rc=1; fi
  code=$(curl -s -o "$W/err.json" -w '%{http_code}' "$MAIN/v1/completions" -d '{"prompt": "a", "top_p": 0}')
  if [[ $code == 400 ]] && grep -q top_p "$W/err.json"; then echo "ok   - curl with top_p 0: 400 naming it"
  else echo "FAIL - curl top_p 0: $code $(cat "$W/err.json")"; rc=1; fi
else
  echo "SKIP - curl checks: curl is not installed"
fi
# the access log names the endpoint
if grep -q "/v1/completions 200" "$W/main.log"; then echo "ok   - access log lines for /v1/completions"
else echo "FAIL - no access log line: $(tail -2 "$W/main.log")"; rc=1; fi

# options for a causal LM only, refused elsewhere; a bad draft refused
"$SQ" serve "$W/enc" --port 0 --draft "$M" >"$W/bad.log" 2>&1
brc=$?
if [[ $brc -eq 2 ]] && grep -q "for a causal LM" "$W/bad.log"; then echo "ok   - --draft on an encoder: exit 2"
else echo "FAIL - --draft on an encoder: exit $brc: $(cat "$W/bad.log")"; rc=1; fi
"$SQ" serve "$M" --port 0 --draft "$W/enc" >"$W/bad.log" 2>&1
brc=$?
if [[ $brc -eq 2 ]]; then echo "ok   - an encoder as the draft: exit 2"
else echo "FAIL - encoder draft: exit $brc: $(cat "$W/bad.log")"; rc=1; fi

# SIGTERM: the server drains and exits 0 (under ASan: nothing leaked)
kill -TERM "$MPID"
wait "$MPID"
mrc=$?
if [[ $mrc -eq 0 ]] && grep -q "stopped after answering" "$W/main.log"; then
  echo "ok   - SIGTERM: exit 0"
else
  echo "FAIL - SIGTERM: exit $mrc: $(tail -5 "$W/main.log")"; rc=1
fi
exit $rc
