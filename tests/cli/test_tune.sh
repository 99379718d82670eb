#!/usr/bin/env bash
# squint tune, bench --instances and serve --instances, without timing: a
# tune on a tiny fixture with a tiny budget writes a valid tune file that
# bench and serve accept (--tune, and MODEL.tune.json by default); a file
# for another model or CPU, or a hostile one, is refused naming the file
# (and, next to the model, warned about and ignored); under `taskset -c 0`
# the grid holds only 1 x 1 points and --instances 2 is refused; serve
# --instances 2 answers with the bytes of `squint embed`, restarts a killed
# worker, stops every worker on SIGTERM and leaves no process behind, not
# even when the parent is killed.
# usage: test_tune.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/squint-tune-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap cleanup EXIT
source "$HERE/lib.sh"
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

for s in 5 6; do
  "$GEN" "$W/m$s" --shape tiny --seed $s >/dev/null &&
    "$SQ" calibrate "$W/m$s" --samples 16 --quiet -o "$W/m$s.sqc" 2>/dev/null &&
    "$SQ" quantize "$W/m$s" --calib "$W/m$s.sqc" -o "$W/m$s.sqm" >/dev/null 2>&1 ||
    { echo "FAIL - fixture"; exit 1; }
done
M=$W/m5.sqm
CORES=$(nproc)
TINY=(--budget 1 --seq 8 --max-batch 2)

# ---- tune writes a valid file; --json lists points within the cores ----
if "$SQ" tune "$M" "${TINY[@]}" --json -o "$W/t.json" >"$W/tune.json" 2>"$W/tune.err" &&
   "$PY" - "$W/t.json" "$W/tune.json" "$CORES" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1])); out = json.load(open(sys.argv[2])); cores = int(sys.argv[3])
assert t["format"] == "squint-tune" and t["version"] == 1, t
assert t["objective"] == "throughput" and t["seq"] == 8
assert t["cpu"]["usable_cores"] == cores and t["cpu"]["name"]
assert t["model"]["size"] > 0 and len(t["model"]["xxh64"]) == 16
assert t["instances"] * t["threads"] <= cores and t["batch"] in (1, 2)
assert t["measured"]["seq_per_s"] > 0 and t["search"]["method"] == "search"
pts = out["points"]
assert pts and all(p["instances"] * p["threads"] <= cores and p["batch"] in (1, 2) for p in pts)
b = out["best"]
assert (b["instances"], b["threads"], b["batch"]) == (t["instances"], t["threads"], t["batch"])
assert out["grid_points"] == sum(cores // n for n in range(1, cores + 1)) * 2
PYEOF
then pass "tune --budget 1: a valid tune file; every point within the $CORES usable cores"
else fail "tune: $(tail -3 "$W/tune.err")"; fi
grep -q '\[1/' "$W/tune.err" && pass "tune: progress on stderr" || fail "tune: no progress on stderr"
"$SQ" tune "$M" --objective latency --budget 0.5 --seq 8 -o "$W/lat.json" >"$W/lat.txt" 2>/dev/null &&
  grep -q '^best: ' "$W/lat.txt" && grep -q '"objective": "latency"' "$W/lat.json" &&
  grep -q '"batch": 1,' "$W/lat.json" &&
  pass "tune --objective latency: batch 1, a table and the best line" ||
  fail "tune --objective latency"

# ---- bench and serve accept it ----
INST=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['instances'])" "$W/t.json")
if "$SQ" bench "$M" --tune "$W/t.json" --window 0.05 >"$W/b.txt" 2>"$W/b.err" &&
   grep -q "^instances=$INST " "$W/b.txt" && grep -q "seq/s=" "$W/b.txt" &&
   grep -q "using $W/t.json" "$W/b.err"; then
  pass "bench --tune: runs the tuned $INST instance(s) and says so"
else fail "bench --tune: $(cat "$W/b.txt" "$W/b.err")"; fi
cp "$M" "$W/auto.sqm"
"$SQ" tune "$W/auto.sqm" --budget 0.3 --seq 8 --max-batch 1 >/dev/null 2>&1 &&
  [[ -f $W/auto.sqm.tune.json ]] &&
  "$SQ" bench "$W/auto.sqm" --window 0.05 2>"$W/b.err" | grep -q "^instances=" &&
  grep -q "using $W/auto.sqm.tune.json" "$W/b.err" &&
  "$SQ" bench "$W/auto.sqm" --no-tune --iters 1 --seq 8 --lat-seq 8 --batch 1 2>&1 | grep -q "^threads=" &&
  pass "tune without -o writes MODEL.tune.json; bench uses it by default, --no-tune not" ||
  fail "the default tune file location"

have_serve=1
[[ $("$SQ" serve x 2>&1) == *"built without libmicrohttpd"* ]] && have_serve=0
if [[ $have_serve == 1 ]]; then
  if start_serve tuned "$M" --tune "$W/t.json" --port 0 --quiet &&
     curl -sf "$URL/health" | grep -q ok; then
    kill -TERM "$PID"; wait "$PID"; rc=$?
    [[ $rc == 0 ]] && grep -q "$INST instance" "$W/tuned.log" &&
      pass "serve --tune: $INST instance(s) answer, SIGTERM exits 0" ||
      fail "serve --tune: exit $rc: $(tail -3 "$W/tuned.log")"
  else fail "serve --tune did not start: $(tail -3 "$W/tuned.log")"; fi
fi

# ---- files for another model, another CPU, hostile files ----
expect_error "bench: a tune file for another model" "tuned for another model" "" \
  -- "$SQ" bench "$W/m6.sqm" --tune "$W/t.json"
[[ $have_serve == 1 ]] && expect_error "serve: a tune file for another model" "$W/t.json was tuned for another model" "" \
  -- "$SQ" serve "$W/m6.sqm" --tune "$W/t.json" --port 0
"$PY" - "$W/t.json" "$W" <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1])); w = sys.argv[2]
def put(name, f):
    d = json.loads(json.dumps(t)); f(d); open(w + "/" + name, "w").write(json.dumps(d))
put("cpu.json", lambda d: d["cpu"].__setitem__("name", "Imaginary CPU 9000"))
put("cores.json", lambda d: d["cpu"].__setitem__("usable_cores", 999))
put("over.json", lambda d: d.__setitem__("instances", d["cpu"]["usable_cores"] + 1))
put("type.json", lambda d: d.__setitem__("batch", "4"))
put("fmt.json", lambda d: d.__setitem__("format", "something-else"))
open(w + "/cut.json", "w").write(open(sys.argv[1]).read()[:100])
open(w + "/big.json", "w").write(" " * 70000 + "{}")
PYEOF
expect_error "a tune file from another CPU: refused by name" "tuned on another CPU (\"Imaginary CPU 9000\"" "" \
  -- "$SQ" bench "$M" --tune "$W/cpu.json"
expect_error "a tune file for another core count" "tuned with 999 usable cores" "" \
  -- "$SQ" bench "$M" --tune "$W/cores.json"
expect_error "a tune file with instances x threads over its cores" "exceed" "" -- "$SQ" bench "$M" --tune "$W/over.json"
expect_error "a tune file with a string for a number" "\"batch\" must be an integer" "" -- "$SQ" bench "$M" --tune "$W/type.json"
expect_error "not a tune file" "not a squint tune file" "" -- "$SQ" bench "$M" --tune "$W/fmt.json"
expect_error "a truncated tune file" "cut.json: invalid JSON" "" -- "$SQ" bench "$M" --tune "$W/cut.json"
expect_error "a tune file over 64 KiB" "big.json" "" -- "$SQ" bench "$M" --tune "$W/big.json"
expect_error "a missing tune file" "nope.json" "" -- "$SQ" bench "$M" --tune "$W/nope.json"
cp "$W/cpu.json" "$W/m5.sqm.tune.json"
if "$SQ" bench "$M" --iters 1 --seq 8 --lat-seq 8 >"$W/b.txt" 2>"$W/b.err" &&
   grep -q "warning: ignoring the tune file next to the model: .*Imaginary CPU 9000" "$W/b.err" &&
   grep -q "^threads=" "$W/b.txt"; then
  pass "a foreign MODEL.tune.json: warned about by name and ignored"
else fail "foreign default tune file: $(cat "$W/b.err")"; fi
rm -f "$W/m5.sqm.tune.json"

# ---- the grid never exceeds the usable cores ----
if command -v taskset >/dev/null; then
  if taskset -c 0 "$SQ" tune "$M" --exhaustive --rounds 1 --budget 0.5 --seq 8 --max-batch 2 --json \
       -o "$W/one.json" >"$W/one.out" 2>/dev/null &&
     "$PY" - "$W/one.out" "$W/one.json" <<'PYEOF'
import json, sys
out = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
assert out["usable_cores"] == 1 and t["cpu"]["usable_cores"] == 1
assert [(p["instances"], p["threads"], p["batch"]) for p in out["points"]] == [(1, 1, 1), (1, 1, 2)], out["points"]
assert (t["instances"], t["threads"]) == (1, 1)
PYEOF
  then pass "taskset -c 0: the exhaustive grid is 1 instance x 1 thread only"
  else fail "tune under taskset -c 0: $(cat "$W/one.out")"; fi
  expect_error "taskset -c 0 bench --instances 2: refused" "this process may use 1" "" \
    -- taskset -c 0 "$SQ" bench "$M" --instances 2
  [[ $have_serve == 1 ]] && expect_error "taskset -c 0 serve --instances 2: refused" "this process may use 1" "" \
    -- taskset -c 0 "$SQ" serve "$M" --instances 2 --port 0
  [[ $CORES -ge 2 ]] && expect_error "taskset -c 0 with a 2-core tune file: refused" "usable cores; this process may use 1" "" \
    -- taskset -c 0 "$SQ" bench "$M" --tune "$W/t.json"
else
  echo "SKIP - taskset checks: taskset is not installed"
fi

if [[ $CORES -lt 2 ]]; then
  echo "SKIP - --instances 2 checks: one usable core"
  finish; exit $?
fi
# ---- bench --instances 2 ----
if "$SQ" bench "$M" --instances 2 --threads 1 --batch 2 --seq 8 --window 0.05 >"$W/b2.txt" 2>&1 &&
   grep -q "^instances=2  threads=1  (CPUs [0-9]* | [0-9]*; " "$W/b2.txt" &&
   grep -q "seq/s=.*aggregate of 2 instances" "$W/b2.txt" && grep -q "latency_ms p50=" "$W/b2.txt"; then
  pass "bench --instances 2: aggregate seq/s and latency, one core each"
else fail "bench --instances 2: $(cat "$W/b2.txt")"; fi

# ---- serve --instances 2 ----
[[ $have_serve == 1 ]] || { echo "SKIP - serve --instances: no libmicrohttpd"; finish; exit $?; }
printf 'The cat sat on the mat.\nTwo dogs are running through a field.\n' >"$W/texts.txt"
"$SQ" embed "$M" --input "$W/texts.txt" --output "$W/ref.f32" --quiet || fail "squint embed"
same_bytes() { # URL: POST the texts, compare with ref.f32
  "$PY" - "$1" "$W/texts.txt" "$W/ref.f32" <<'PYEOF'
import json, struct, sys, urllib.request
texts = open(sys.argv[2]).read().split("\n")[:-1]
req = urllib.request.Request(sys.argv[1] + "/v1/embeddings", data=json.dumps({"input": texts}).encode(),
                             headers={"Content-Type": "application/json"})
r = json.load(urllib.request.urlopen(req, timeout=60))
got = b"".join(struct.pack("<%df" % len(d["embedding"]), *d["embedding"]) for d in r["data"])
sys.exit(0 if got == open(sys.argv[3], "rb").read() else 1)
PYEOF
}
workers() { pgrep -P "$1" | sort; }
wait_for() { # PATTERN FILE: poll until FILE holds PATTERN (bounded)
  for _ in $(seq 1 1200); do grep -q "$1" "$2" && return 0; sleep 0.05; done; return 1
}
gone() { # PIDS...: poll until none exists (bounded)
  for _ in $(seq 1 1200); do
    local alive=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && return 0
    sleep 0.05
  done
  return 1
}
if start_serve inst "$M" --instances 2 --port 0 --quiet; then
  mapfile -t WS < <(workers "$PID")
  ok=1
  for _ in 1 2 3 4 5 6; do same_bytes "$URL" || ok=0; done
  [[ ${#WS[@]} == 2 && $ok == 1 ]] &&
    pass "serve --instances 2: two pinned workers, every answer the bytes of squint embed" ||
    fail "serve --instances 2: workers ${WS[*]}, bytes ok=$ok"
  grep -q "worker 0 (pid ${WS[0]}, CPUs" "$W/inst.log" && grep -q "worker 1 (pid ${WS[1]}, CPUs" "$W/inst.log" &&
    pass "serve --instances 2: each worker says its pid and cores" || fail "worker lines: $(cat "$W/inst.log")"
  kill -9 "${WS[0]}"
  ready3() { [[ $(grep -c ") ready" "$W/inst.log") -ge 3 ]]; }
  if wait_for "killed by signal 9 (Killed): restarting it" "$W/inst.log"; then
    for _ in $(seq 1 1200); do ready3 && break; sleep 0.05; done
    mapfile -t WS2 < <(workers "$PID")
    ready3 && [[ ${#WS2[@]} == 2 ]] && same_bytes "$URL" && same_bytes "$URL" &&
      pass "a killed worker is restarted and the server answers" ||
      fail "after the restart: workers ${WS2[*]}: $(tail -3 "$W/inst.log")"
  else
    fail "no restart: $(tail -3 "$W/inst.log")"; WS2=("${WS[@]}")
  fi
  kill -TERM "$PID"
  wait "$PID"; rc=$?
  if [[ $rc == 0 ]] && grep -q "all 2 workers stopped" "$W/inst.log" && gone "${WS2[@]}"; then
    pass "SIGTERM: every worker stopped, exit 0, no process left"
  else fail "SIGTERM: exit $rc, $(tail -3 "$W/inst.log")"; fi
else fail "serve --instances 2 did not start: $(tail -3 "$W/inst.log")"; fi
# The parent killed outright: its workers go too (no orphans).
if start_serve orphan "$M" --instances 2 --port 0 --quiet; then
  mapfile -t WS < <(workers "$PID")
  kill -9 "$PID"
  wait "$PID" 2>/dev/null
  gone "${WS[@]}" && pass "the parent SIGKILLed: its workers exit (no orphans)" ||
    fail "orphans left: ${WS[*]}"
else fail "serve --instances 2 (orphan check) did not start"; fi
# A worker that cannot start stops the server with its message.
expect_error "serve --instances 2 on a missing model: exit 2 naming it" "nope.sqm" "" \
  -- "$SQ" serve "$W/nope.sqm" --instances 2 --port 0
finish
