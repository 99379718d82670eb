#!/usr/bin/env bash
# Is `squint tune`'s pick within 5% of the best point of the exhaustive
# grid? Runs the search, then the exhaustive grid (every point --rounds
# times, alternating order), and reports the grid's figure for the pick
# against the grid's best. Timing on a shared machine: not a CI test.
#   tune_vs_grid.sh --squint build/squint --gen build/tests/fixture/squint-gen-fixture \
#     [--model M.sqm] [--objective throughput|latency] [--seq 128] [--max-batch 16] \
#     [--budget 60] [--grid-budget 120] [--rounds 2] [--work DIR]
# Without --model it builds the bge-small-shaped int8 fixture (--outliers 2,
# the bge vocabulary when the shared data has it) in the work directory.
set -euo pipefail
SQ=build/squint GEN=build/tests/fixture/squint-gen-fixture MODEL= OBJ=throughput SEQ=128 MAXB=16
BUDGET=60 GRID_BUDGET=120 ROUNDS=2 W=/tmp/squint-tune-vs-grid
while [ $# -gt 0 ]; do
  case $1 in
  --squint) SQ=$2 ;; --gen) GEN=$2 ;; --model) MODEL=$2 ;; --objective) OBJ=$2 ;;
  --seq) SEQ=$2 ;; --max-batch) MAXB=$2 ;; --budget) BUDGET=$2 ;; --grid-budget) GRID_BUDGET=$2 ;;
  --rounds) ROUNDS=$2 ;; --work) W=$2 ;;
  -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
  *) echo "tune_vs_grid: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
mkdir -p "$W"
if [[ -z $MODEL ]]; then
  MODEL=$W/bge-small.sqm
  if [[ ! -f $MODEL ]]; then
    vocab=()
    V=${SQUINT_SHARED_DATA:-$(dirname "$0")/../../../shared/data}/bge-small-en-v1.5/vocab.txt
    [[ -f $V ]] || V=/work/shared/data/bge-small-en-v1.5/vocab.txt
    [[ -f $V ]] && vocab=(--vocab "$V")
    "$GEN" "$W/model" --shape bge-small --outliers 2 "${vocab[@]}" >/dev/null
    nice "$SQ" calibrate "$W/model" --samples 32 --quiet -o "$W/model.sqc"
    nice "$SQ" quantize "$W/model" --calib "$W/model.sqc" -o "$MODEL" >"$W/quantize.log" 2>&1
  fi
fi
common=(--objective "$OBJ" --seq "$SEQ" --max-batch "$MAXB" --json)
nice "$SQ" tune "$MODEL" "${common[@]}" --budget "$BUDGET" -o "$W/search.tune.json" \
  >"$W/search.json" 2>"$W/search.log"
nice "$SQ" tune "$MODEL" "${common[@]}" --exhaustive --rounds "$ROUNDS" --budget "$GRID_BUDGET" \
  -o "$W/grid.tune.json" >"$W/grid.json" 2>"$W/grid.log"
python3 - "$W/search.json" "$W/grid.json" "$OBJ" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2])); obj = sys.argv[3]
key = lambda p: (p["instances"], p["threads"], p["batch"])
score = (lambda p: p["seq_per_s"]) if obj == "throughput" else (lambda p: 1000.0 / p["p50_ms"])
grid = {key(p): p for p in g["points"]}
print("cpu: %s, %d usable cores; objective %s, seq %d" % (g["cpu"], g["usable_cores"], obj, g["seq"]))
print("%9s %7s %5s %10s %10s %10s  %s" % ("instances", "threads", "batch", "seq/s", "p50 ms", "p95 ms", ""))
best = max(g["points"], key=score)
pick = s["best"]
for p in g["points"]:
    mark = ("grid best " if key(p) == key(best) else "") + ("tune's pick" if key(p) == key(pick) else "")
    print("%9d %7d %5d %10.2f %10.2f %10.2f  %s" % (p["instances"], p["threads"], p["batch"],
          p["seq_per_s"], p["p50_ms"], p["p95_ms"], mark))
ratio = score(grid[key(pick)]) / score(best)
print("search: %d of %d points, %d measurements; exhaustive: %d points x %d measurements"
      % (s["points_measured"], s["grid_points"], s["measurements"], g["points_measured"],
         g["measurements"] // max(1, g["points_measured"])))
print("tune's pick %s: %.2f%s; grid best %s: %.2f; ratio %.3f (%s 0.95)"
      % (key(pick), score(grid[key(pick)]), " seq/s" if obj == "throughput" else " 1/s",
         key(best), score(best), ratio, ">=" if ratio >= 0.95 else "<"))
sys.exit(0 if ratio >= 0.95 else 1)
PYEOF
