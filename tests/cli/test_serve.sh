#!/usr/bin/env bash
# squint serve end to end (tests/cli/serve_checks.py does the HTTP side with
# Python's standard library): every embedding the bytes of `squint embed`
# (OpenAI float and base64, TEI), usage tokens, 16 concurrent clients,
# JSON errors with 400 / 404 / 405 / 413 (body, inputs, tokens, a chunked
# body), 401 with an API key, a slow client timed out, 503 with Retry-After
# on a full queue, and SIGTERM finishing a queued request and exiting 0.
# usage: test_serve.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONDONTWRITEBYTECODE=1
W=$(mktemp -d /tmp/squint-serve-XXXXXX)
pids=()
. "$(dirname "$0")/lib.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap cleanup EXIT

if [[ $("$SQ" serve x 2>&1) == *"built without libmicrohttpd"* ]]; then
  echo "SKIP: squint was built without libmicrohttpd"
  exit 77
fi
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

"$GEN" "$W/m" --shape tiny --seed 5 --outliers 2 >/dev/null &&
  "$SQ" calibrate "$W/m" --samples 64 --quiet -o "$W/m.sqc" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>&1 ||
  { echo "FAIL - fixture"; exit 1; }
cat >"$W/texts.txt" <<'EOF'
A man with a hard hat is dancing.
A young child is riding a horse.
The cat sat on the mat.
a

Café naïve résumé — Ünïcödé 東京
Two dogs are running through a field of tall grass while their owners watch from the hill.
I don't think that's what she meant, do you?
The committee, having reviewed the evidence presented over several long sessions, concluded that the proposal could not be adopted without substantial revisions to its budget, its timeline and its governance structure.
EOF
"$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --precision int8 --ranges-from "$W/texts.txt" \
  --ranges-out "$W/rg.npy" --output "$W/p8.jsonl" --quiet &&
  "$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --precision ubinary --output "$W/pb.jsonl" --quiet ||
  { echo "FAIL - squint embed --precision"; exit 1; }
"$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/ref8.f32" --dimensions 8 --quiet ||
  { echo "FAIL - squint embed --dimensions 8"; exit 1; }
"$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/ref.f32" --quiet ||
  { echo "FAIL - squint embed"; exit 1; }
# A classification head for /classify, and what `squint classify` says.
printf '{"text": "a cat sat", "label": "cat"}\n{"text": "a dog ran", "label": "dog"}\n{"text": "the cat slept", "label": "cat"}\n{"text": "the dog barked", "label": "dog"}\n{"text": "a bird sang", "label": "bird"}\n{"text": "the bird flew", "label": "bird"}\n' >"$W/train.jsonl"
"$SQ" train-head "$W/m.sqm" --train "$W/train.jsonl" -o "$W/head.json" 2>/dev/null &&
  "$SQ" classify "$W/m.sqm" --head "$W/head.json" --input "$W/texts.txt" --output "$W/classes.jsonl" 2>/dev/null ||
  { echo "FAIL - train-head / classify"; exit 1; }
# squint rerank: the first text as the query, the rest as documents.
tail -n +2 "$W/texts.txt" >"$W/docs.txt"
"$SQ" rerank "$W/m.sqm" --query "$(head -1 "$W/texts.txt")" --docs "$W/docs.txt" -o "$W/rerank.jsonl" ||
  { echo "FAIL - squint rerank"; exit 1; }
DIM=$("$SQ" inspect "$W/m.sqm" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['metadata']['config']['hidden'])")

# start NAME ARGS...: `squint serve ARGS` on a free port (lib.sh start_serve,
# 30 s to listen); sets URL and PID, or the test fails here.
start() {
  SERVE_WAIT_TRIES=600 start_serve "$@" && return 0
  echo "FAIL - server $1 did not start: $(tail -2 "$W/$1.log")"
  exit 1
}
start main "$W/m.sqm" --port 0 --quiet --batch-wait 5 --head "$W/head.json" --ranges "$W/rg.npy"
MAIN=$URL
start limits "$W/m.sqm" --port 0 --quiet --max-body 4096 --max-inputs 64 \
  --max-tokens 100 --timeout 1
LIMITS=$URL
start queue "$W/m.sqm" --port 0 --queue 1 --batch-wait 4000 --max-batch 65536
QUEUE=$URL
QPID=$PID
start drain "$W/m.sqm" --port 0 --quiet --timeout 5
DRAIN=$URL
DPID=$PID
printf 'sesame-%s\n' "$RANDOM" >"$W/key"
start key "$W/m.sqm" --port 0 --quiet --api-key-file "$W/key"
KEYURL=$URL

SERVE_REF8=$W/ref8.f32 SERVE_P8=$W/p8.jsonl SERVE_PB=$W/pb.jsonl SERVE_DRAIN_SEEN=$W/drain.seen SERVE_CLASSES=$W/classes.jsonl SERVE_RERANK=$W/rerank.jsonl "$PY" "$HERE/serve_checks.py" "$MAIN" "$W/ref.f32" "$DIM" "$W/texts.txt" "$LIMITS" "$QUEUE" \
  "$QPID" "$KEYURL" "$(head -1 "$W/key")" "$LIMITS" "$DRAIN" "$DPID"
rc=$?
wait "$DPID"
drc=$?
answered=$(grep -o 'stopped after answering [0-9]*' "$W/drain.log" | grep -o '[0-9]*$')
seen=$(cat "$W/drain.seen" 2>/dev/null)
if [[ $drc -eq 0 && -n $answered && $answered == "$seen" ]]; then
  echo "ok   - SIGTERM under load: exit 0; the server answered $answered requests, the clients got $seen answers: none lost"
else
  echo "FAIL - SIGTERM under load: exit $drc, server answered '$answered', clients got '$seen'"; rc=1
fi
# curl, as a user would: the same bytes as squint embed
if command -v curl >/dev/null; then
  "$PY" -c "import json,sys; print(json.dumps({'input': open(sys.argv[1], encoding='utf-8').read().split('\n')[:-1]}))" \
    "$W/texts.txt" >"$W/body.json"
  if curl -sf "$MAIN/v1/embeddings" -H 'Content-Type: application/json' --data-binary @"$W/body.json" \
       -o "$W/curl.json" &&
     "$PY" -c "
import json, struct, sys
r = json.load(open(sys.argv[1])); ref = open(sys.argv[2], 'rb').read()
got = b''.join(struct.pack('<%df' % len(d['embedding']), *d['embedding']) for d in r['data'])
sys.exit(0 if got == ref else 1)" "$W/curl.json" "$W/ref.f32"; then
    echo "ok   - curl POST /v1/embeddings: the bytes of squint embed"
  else
    echo "FAIL - curl POST /v1/embeddings"; rc=1
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' "$MAIN/v1/embeddings" --data-binary '{"input": ')
  [[ $code == 400 ]] && echo "ok   - curl with malformed JSON: 400" || { echo "FAIL - curl malformed: $code"; rc=1; }
else
  echo "SKIP - curl checks: curl is not installed"
fi
# The queue server got SIGTERM from the checks: it must exit 0 by itself.
wait "$QPID"
qrc=$?
if [[ $qrc -eq 0 ]] && grep -q "finishing the requests in flight" "$W/queue.log" &&
   grep -q "stopped" "$W/queue.log"; then
  echo "ok   - SIGTERM: the server drained and exited 0"
else
  echo "FAIL - SIGTERM: exit $qrc: $(tail -3 "$W/queue.log")"
  rc=1
fi
# Bad options fail before listening.
"$SQ" serve "$W/m.sqm" --host not-an-address --port 0 >"$W/bad.log" 2>&1
brc=$?
if [[ $brc -eq 2 ]] && grep -q "not-an-address" "$W/bad.log"; then
  echo "ok   - a bad --host: exit 2 naming it"
else
  echo "FAIL - bad --host: exit $brc: $(cat "$W/bad.log")"
  rc=1
fi
"$SQ" serve "$W/nope.sqm" --port 0 >"$W/bad.log" 2>&1
brc=$?
[[ $brc -eq 2 ]] && grep -q "nope.sqm" "$W/bad.log" && echo "ok   - a missing model: exit 2 naming it" ||
  { echo "FAIL - missing model: exit $brc: $(cat "$W/bad.log")"; rc=1; }
# issue 38 item 1: slow clients are cut after --timeout however they trickle
start slow "$W/m.sqm" --port 0 --quiet --max-connections 16 --timeout 2
"$PY" "$HERE/serve_slow_clients.py" "$URL" || rc=1
# issue 38 item 12: a served model truncated in place (cp onto it, a failed
# copy) gives SIGBUS; the server says which file and how to replace one safely
cp "$W/m.sqm" "$W/live.sqm"
start live "$W/live.sqm" --port 0 --quiet
LPID=$PID
truncate -s 4096 "$W/live.sqm"
"$PY" -c "import json,sys,urllib.request as u
try: u.urlopen(u.Request(sys.argv[1] + '/v1/embeddings', json.dumps({'input': ['a text']}).encode(), {'Content-Type': 'application/json'}), timeout=20)
except Exception: pass" "$URL"
wait "$LPID"
lrc=$?
if [[ $lrc -eq $((128 + 7)) ]] && grep -q "SIGBUS.*rewritten in place.*live.sqm.*renaming it over" "$W/live.log"; then
  echo "ok   - a model truncated under the server: SIGBUS, the file and the safe way named"
else
  echo "FAIL - truncated model: exit $lrc: $(tail -2 "$W/live.log")"; rc=1
fi
exit $rc
