#!/usr/bin/env bash
# Threads that never hurt on a busy machine: whole-command wall time of five
# everyday squint jobs at --threads 1 and at the default thread count (no
# --threads: squint's own choice, from the affinity mask and, in newer
# builds, the cgroup CPU quota), (a) on an idle machine and (b) beside a CPU
# hog: one busy-looping process per CPU (`nproc`), started before the hog
# block and killed after it (and on exit / INT / TERM). The environment
# variables that would override the defaults (OMP_NUM_THREADS,
# OMP_WAIT_POLICY, GOMP_SPINCOUNT, SQUINT_THREAD_MIN_NS) are unset for the
# runs, and the table says which were set.
#
#   1 embed      USE Lite int8 .sqm, `squint embed --batch 1`, 200 STS-B sentences
#   2 bench      bge-small-shape int8 .sqm, `squint bench --batch 32 --seq 256
#                --iters 2 --warmup 0` (plus bench's own 1 x 128 latency pass)
#   3 generate   stories260K, `squint generate --max-tokens 256` (greedy)
#   4 calibrate  stories260K, `squint calibrate` on tinystories-sample (all 19
#                texts, windowed)
#   5 serve      `squint serve` of the USE Lite int8 .sqm, tests/bench/serve_load.py
#                with 4 clients x 150 requests of 1 text: the time for those
#                600 requests (requests / (requests/s)); server start excluded
#
# Every cell is the median of --runs runs; within a round the 1-thread and
# default runs alternate (and, with --base, the base and main binaries),
# the order reversed every other round. The ratio default/1 is the default
# run's time over the 1-thread run's: above 1, the default threads hurt.
#
# usage: bash tests/bench/threads_busy.sh [--squint PATH] [--base PATH] [--runs 3]
#          [--work DIR] [--only ROWS] [--data DIR] [--gen PATH] [--timeout S]
#   --squint   the binary measured (default: build/squint of this repository)
#   --base     a second binary (e.g. a build of the commit before a change):
#              every timing is also taken with it, alternated with --squint
#   --runs     runs per cell (default 3)
#   --work     work folder for the artifacts, reused when present (default
#              /tmp/squint-threads-bench; `rm -rf` it to rebuild); the results
#              go to WORK/threads_busy.json
#   --only     rows to run: numbers or names, comma separated (e.g. 1,3 or
#              embed,serve)
#   --data     the shared data (default $SQUINT_SHARED_DATA, else ../shared/data
#              next to the repository)
#   --gen      squint-gen-fixture (default: next to --squint in its build tree,
#              else build/tests/fixture/squint-gen-fixture); only to build the
#              bge-small fixture once
#   --timeout  seconds before one command is stopped and counted as ">S"
#              (default 120)
# Artifacts are built with --squint (about 10 s: USE Lite calibrate +
# quantize, the bge-small-shape fixture, its calibrate + quantize).
#
# How long: on a 2-vCPU Xeon (Sapphire Rapids, AMX; shared, load 1-3), a
# --runs 3 run of all five rows took 2 min 42 s, artifacts (about 10 s)
# included: ~45 s idle, ~105 s beside the hog. The hog block is the
# unpredictable part: where the default threads stall beside it, one
# command can take 10-100x its idle time (the serve row once took 43 s for
# 1,000 requests, the embed row 0.3 s in one run and 14.6 s in the next), so
# allow 5-8 minutes; --base doubles the timed part; --timeout caps each
# command. A 2-core CPU without AMX/VNNI runs the bench row 2-3x slower.
set -euo pipefail
export LC_ALL=C
overrides=""
for v in OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT SQUINT_THREAD_MIN_NS; do
  if [[ -n ${!v+x} ]]; then overrides+=" $v=${!v}"; unset "$v"; fi
done

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prog=threads_busy

die() { echo "$prog: $*" >&2; exit 2; }

cmdline=bash
for a in "$0" "$@"; do
  if [[ $a =~ ^[A-Za-z0-9_./=:,@%+-]+$ ]]; then cmdline+=" $a"; else cmdline+=" $(printf '%q' "$a")"; fi
done

squint=$repo/build/squint base="" runs=3 work=/tmp/squint-threads-bench only="" gen="" tmo=120
data=${SQUINT_SHARED_DATA:-$repo/../shared/data}
while [[ $# -gt 0 ]]; do
  case $1 in
  --squint | --base | --runs | --work | --only | --data | --gen | --timeout)
    [[ $# -ge 2 ]] || die "$1 needs a value"
    case $1 in
    --squint) squint=$2 ;; --base) base=$2 ;; --runs) runs=$2 ;; --work) work=$2 ;;
    --only) only=$2 ;; --data) data=$2 ;; --gen) gen=$2 ;; --timeout) tmo=$2 ;;
    esac
    shift 2 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive integer, not '$runs'"
[[ $tmo =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer (seconds), not '$tmo'"

# ---- rows
names=(embed bench generate calibrate serve)
declare -A want=()
if [[ -z $only ]]; then
  for n in "${names[@]}"; do want[$n]=1; done
else
  IFS=',' read -ra sel <<<"$only"
  for s in "${sel[@]}"; do
    s=${s// /}
    [[ -z $s ]] && continue
    if [[ $s =~ ^[1-5]$ ]]; then want[${names[$((s - 1))]}]=1
    elif [[ " ${names[*]} " == *" $s "* ]]; then want[$s]=1
    else die "--only: unknown row '$s' (rows: 1-5 or ${names[*]})"; fi
  done
  [[ ${#want[@]} -gt 0 ]] || die "--only selects no row"
fi
rows=()
for n in "${names[@]}"; do [[ -n ${want[$n]:-} ]] && rows+=("$n"); done

# ---- inputs
abspath() { [[ $1 == /* ]] && echo "$1" || echo "$PWD/$1"; }
squint=$(abspath "$squint")
[[ -x $squint && -f $squint ]] || die "no squint binary at $squint (build it: ninja -C build, or pass --squint PATH)"
bins=(main)
declare -A binpath=([main]=$squint)
if [[ -n $base ]]; then
  base=$(abspath "$base")
  [[ -x $base && -f $base ]] || die "--base: no executable at $base"
  bins+=(base)
  binpath[base]=$base
fi
[[ -d $data ]] || die "no shared data folder at $data (set SQUINT_SHARED_DATA or pass --data DIR)"
data=$(cd "$data" && pwd)
need() { [[ -f $1 ]] || die "missing $1 ($2)"; }
use_dir=$data/use-lite-tfjs
stsb=$data/stsb-glue/original/sts-dev.tsv
s260=$data/stories260K/stories260K.bin
tiny=$data/tinystories-sample/TinyStories-valid-head.txt
qasper=$repo/calib/data/qasper-calib.jsonl.zst
vocab=$data/bge-small-en-v1.5/vocab.txt
if [[ -n ${want[embed]:-} || -n ${want[serve]:-} ]]; then
  need "$use_dir/model.json" "USE Lite (tfjs), rows embed and serve"
  need "$stsb" "STS-B sentences, rows embed and serve"
  need "$qasper" "the bundled QASPER calibration corpus"
fi
if [[ -n ${want[serve]:-} ]]; then
  need "$here/serve_load.py" "the load generator"
  command -v python3 >/dev/null || die "python3 is needed for the serve row"
  [[ $("$squint" serve x 2>&1 || true) != *"built without libmicrohttpd"* ]] ||
    die "$squint was built without libmicrohttpd: no serve row (drop it with --only)"
fi
if [[ -n ${want[generate]:-} || -n ${want[calibrate]:-} ]]; then
  need "$s260" "stories260K, rows generate and calibrate"
fi
if [[ -n ${want[calibrate]:-} ]]; then need "$tiny" "tinystories-sample, row calibrate"; fi
command -v python3 >/dev/null || die "python3 is needed (timing table)"
command -v timeout >/dev/null || die "timeout (coreutils) is needed"
command -v flock >/dev/null || die "flock (util-linux) is needed"

# ---- work folder (outside git), locked against a second run
mkdir -p "$work" || die "cannot create the work folder $work"
work=$(cd "$work" && pwd)
if git -C "$work" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  die "the work folder $work is inside a git work tree; pick one outside (--work DIR)"
fi
exec 9>"$work/.lock"
flock -n 9 || die "another threads_busy.sh run holds $work/.lock"
for f in "$work"/*.tune.json; do
  [[ -e $f ]] && die "$f would change the default configuration of bench/serve; remove it"
done

# ---- cleanup: hog, server, the command in flight, partial files
hog_pids=() cpid="" spid="" tmpdir=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [[ -n $cpid ]] && { kill -TERM "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true; }
  [[ -n $spid ]] && { kill -KILL "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; }
  stop_hog
  [[ -n $tmpdir ]] && rm -rf "$tmpdir"
  rm -rf "$work"/*.partial "$work/threads_busy.json.tmp"
  exit "$rc"
}
stop_hog() {
  local p
  for p in "${hog_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${hog_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  hog_pids=()
}
start_hog() {
  local i
  for ((i = 0; i < ncpu; i++)); do
    bash -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    hog_pids+=($!)
  done
  sleep 1
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tmpdir=$(mktemp -d "$work/run.XXXXXX.partial")

ncpu=$(nproc)
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*: *//' || true)
cpu=${cpu:-unknown}

# ---- artifacts (built once with --squint, each under a .partial name first)
art() { echo "$prog: building $1" >&2; }
quietly() { # LOG CMD...: run, show the log when it fails
  local log=$1; shift
  "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "failed: $*"; }
}
texts=$work/stsb-200.txt
use_sqm=$work/use-lite-int8.sqm
bge_sqm=$work/bge-small-int8.sqm
if [[ -n ${want[embed]:-} || -n ${want[serve]:-} ]]; then
  if [[ ! -f $texts ]]; then
    head -n 100 "$stsb" | cut -f6,7 | tr '\t' '\n' | grep -v '^$' >"$texts.partial" || true
    [[ $(wc -l <"$texts.partial") -eq 200 ]] || die "$stsb: expected 200 sentences in its first 100 pairs"
    mv "$texts.partial" "$texts"
  fi
  if [[ ! -f $use_sqm ]]; then
    art "$use_sqm (USE Lite: calibrate on QASPER, quantize with recipes/use-lite.yaml)"
    quietly "$tmpdir/use.log" "$squint" calibrate "$use_dir" --corpus "$qasper" --samples 256 --quiet \
      -o "$tmpdir/use.sqc"
    quietly "$tmpdir/use.log" "$squint" quantize "$use_dir" --calib "$tmpdir/use.sqc" \
      --recipe "$repo/recipes/use-lite.yaml" -o "$tmpdir/use.sqm"
    mv "$tmpdir/use.sqm" "$use_sqm"
  fi
fi
if [[ -n ${want[bench]:-} && ! -f $bge_sqm ]]; then
  if [[ -z $gen ]]; then
    gen=$(dirname "$squint")/tests/fixture/squint-gen-fixture
    [[ -x $gen ]] || gen=$repo/build/tests/fixture/squint-gen-fixture
  fi
  [[ -x $gen ]] || die "no squint-gen-fixture at $gen (build it, or pass --gen PATH)"
  vargs=()
  [[ -f $vocab ]] && vargs=(--vocab "$vocab")
  art "$bge_sqm (bge-small-shape fixture --outliers 2, calibrated on QASPER, default recipe)"
  quietly "$tmpdir/bge.log" "$gen" "$tmpdir/bge-small" --shape bge-small --outliers 2 "${vargs[@]}"
  quietly "$tmpdir/bge.log" "$squint" calibrate "$tmpdir/bge-small" --corpus "$qasper" --samples 64 \
    --max-seq 256 --quiet -o "$tmpdir/bge.sqc"
  quietly "$tmpdir/bge.log" "$squint" quantize "$tmpdir/bge-small" --calib "$tmpdir/bge.sqc" \
    -o "$tmpdir/bge.sqm"
  mv "$tmpdir/bge.sqm" "$bge_sqm"
  rm -rf "$tmpdir/bge-small"
fi

# ---- one timed command
now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
SERVE_CLIENTS=4 SERVE_REQUESTS=150
results=$tmpdir/runs.tsv
: >"$results"

timed() { # OUT CMD...: sets rc, elapsed; stdout to OUT, stderr to $tmpdir/err
  local out=$1 t0 t1; shift
  t0=$(now)
  timeout -k 5 "$tmo" "$@" >"$out" 2>"$tmpdir/err" </dev/null &
  cpid=$!
  rc=0
  wait "$cpid" || rc=$?
  cpid=""
  t1=$(now)
  elapsed=$(secs "$t0" "$t1")
}
failed() { # what: show stderr, stop
  echo "$prog: $1 failed (exit $rc):" >&2
  tail -n 20 "$tmpdir/err" >&2
  die "stopped (a stale artifact? rm -rf $work to rebuild them)"
}

serve_run() { # BIN THREADS_ARGS...: sets status, elapsed
  local bin=$1; shift
  local log=$tmpdir/serve.log url="" i
  rm -f "$log" && : >"$log" # not the last server's address: the child may open it late
  "$bin" serve "$use_sqm" --port 0 --quiet "$@" </dev/null >/dev/null 2>"$log" &
  spid=$!
  for ((i = 0; i < 1200; i++)); do
    url=$(grep -o 'http://[^ ]* ' "$log" | head -n 1 | tr -d ' ' || true) # the whole address
    [[ -n $url ]] && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
  done
  if [[ -z $url ]]; then
    kill -KILL "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    spid=""
    tail -n 20 "$log" >&2
    die "squint serve did not start ($bin)"
  fi
  timed "$tmpdir/load.out" python3 "$here/serve_load.py" "$url" "$texts" \
    --clients "$SERVE_CLIENTS" --requests "$SERVE_REQUESTS" --texts 1
  kill -TERM "$spid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  spid=""
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then status=timeout elapsed=$tmo; return; fi
  [[ $rc -eq 0 ]] || failed "serve_load.py against $bin"
  # | clients | texts/request | requests/s | texts/s | p50 | p90 | p99 | texts/call | errors |
  local rps errs
  rps=$(awk -F'|' '/^\| *[0-9]/ { gsub(/ /, "", $4); print $4; exit }' "$tmpdir/load.out")
  errs=$(awk -F'|' '/^\| *[0-9]/ { gsub(/ /, "", $10); print $10; exit }' "$tmpdir/load.out")
  [[ -n $rps && $errs == 0 ]] || { cp "$tmpdir/load.out" "$tmpdir/err"; rc=1; failed "serve_load.py (errors: ${errs:-?})"; }
  elapsed=$(awk -v n=$((SERVE_CLIENTS * SERVE_REQUESTS)) -v r="$rps" 'BEGIN { printf "%.4f", n / r }')
  status=ok
}

run_one() { # ROW BIN THREADS(1|default): sets status, elapsed
  local row=$1 bin=$2 thr=$3 t=()
  [[ $thr == 1 ]] && t=(--threads 1)
  case $row in
  embed) timed /dev/null "$bin" embed "$use_sqm" --input "$texts" --batch 1 --quiet --output - --format f32 "${t[@]}" ;;
  bench) timed "$tmpdir/bench.out" "$bin" bench "$bge_sqm" --batch 32 --seq 256 --iters 2 --warmup 0 "${t[@]}" ;;
  generate) timed /dev/null "$bin" generate "$s260" --max-tokens 256 --temperature 0 --quiet "${t[@]}" ;;
  calibrate)
    timed /dev/null "$bin" calibrate "$s260" --corpus "$tiny" --samples 0 --window --quiet "${t[@]}" \
      -o "$tmpdir/s.sqc"
    rm -f "$tmpdir/s.sqc" ;;
  serve) serve_run "$bin" "${t[@]}"; return ;;
  esac
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then status=timeout elapsed=$tmo; return; fi
  [[ $rc -eq 0 ]] || failed "$row ($bin, threads $thr)"
  status=ok
}

# ---- the runs
variants=()
for b in "${bins[@]}"; do variants+=("$b 1" "$b default"); done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(now)
for cond in idle hog; do
  if [[ $cond == hog ]]; then
    echo "$prog: starting the hog ($ncpu busy loops)" >&2
    start_hog
  fi
  for ((r = 1; r <= runs; r++)); do
    order=("${variants[@]}")
    if ((r % 2 == 0)); then
      order=()
      for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[$i]}"); done
    fi
    for row in "${rows[@]}"; do
      for v in "${order[@]}"; do
        read -r b thr <<<"$v"
        run_one "$row" "${binpath[$b]}" "$thr"
        printf '%s\t%s\t%s\t%s\t%d\t%s\t%s\n' "$row" "$b" "$cond" "$thr" "$r" "$elapsed" "$status" >>"$results"
        printf '%s: %-4s run %d/%d  %-9s %-4s threads %-7s %8.3f s%s\n' "$prog" "$cond" "$r" "$runs" \
          "$row" "$b" "$thr" "$elapsed" "$([[ $status == ok ]] || echo " ($status)")" >&2
      done
    done
  done
  if [[ $cond == hog ]]; then stop_hog; fi
done
total=$(secs "$t_start" "$(now)")

# ---- the table and the JSON
python3 - "$results" "$work/threads_busy.json" "$cmdline" "$cpu" "$ncpu" "$runs" "$tmo" "$load0" \
  "$total" "$squint" "$base" "${rows[*]}" "${overrides# }" <<'PY'
import json, os, statistics, sys, time

res, out, cmdline, cpu, ncpu, runs, tmo, load0, total, squint, base, rows, overrides = sys.argv[1:]
ncpu, runs, tmo, total = int(ncpu), int(runs), float(tmo), float(total)
rows = rows.split()
labels = {
    "embed": "1 USE Lite int8 `embed --batch 1`, 200 STS-B texts",
    "bench": "2 bge-small-shape int8 `bench` 32 x 256, 2 iters",
    "generate": "3 stories260K `generate` 256 tokens, greedy",
    "calibrate": "4 stories260K `calibrate`, tinystories-sample",
    "serve": "5 `serve` USE Lite int8, 4 clients x 150 requests",
}
data = {}
for line in open(res):
    row, b, cond, thr, r, s, st = line.rstrip("\n").split("\t")
    data.setdefault((row, b, cond, thr), []).append({"run": int(r), "seconds": float(s), "status": st})
bins = ["main"] + (["base"] if base else [])


def cell(row, b, cond, thr):
    rs = data.get((row, b, cond, thr), [])
    if not rs:
        return None
    vals = sorted(x["seconds"] for x in rs)
    med = statistics.median(vals)
    return {"median_s": med, "runs": rs, "lower_bound": med >= tmo}


def fmt(c):
    if c is None:
        return "-"
    return (">%.0f" if c["lower_bound"] else "%.3f") % c["median_s"]


def ratio(a, b):  # a / b (times)
    if a is None or b is None or b["median_s"] <= 0:
        return None, "-"
    v = a["median_s"] / b["median_s"]
    lb = a["lower_bound"] and not b["lower_bound"]
    ub = b["lower_bound"] and not a["lower_bound"]
    s = "%.2fx" % v
    if lb:
        s = ">" + s
    elif ub:
        s = "<" + s
    elif a["lower_bound"] and b["lower_bound"]:
        s = "?"
    return v, s


table, js_rows = [], []
hdr = ["row", "idle 1 thread", "idle default", "default/1", "hog 1 thread", "hog default", "default/1"]
if base:
    hdr += ["base idle 1 thread", "base idle default", "base default/1",
            "base hog 1 thread", "base hog default", "base default/1",
            "default new/base idle", "default new/base hog"]
for row in rows:
    line = [labels[row]]
    jr = {"row": row, "label": labels[row].split(" ", 1)[1], "binaries": {}}
    for b in bins:
        jb = {}
        for cond in ("idle", "hog"):
            one, dflt = cell(row, b, cond, "1"), cell(row, b, cond, "default")
            v, s = ratio(dflt, one)
            line += [fmt(one), fmt(dflt), s]
            jb[cond] = {"threads_1": one, "default": dflt, "default_over_1": v}
        jr["binaries"][b] = jb
    if base:
        cmp = {}
        for cond in ("idle", "hog"):
            v, s = ratio(cell(row, "main", cond, "default"), cell(row, "base", cond, "default"))
            line.append(s)
            cmp[cond] = v
        jr["default_new_over_base"] = cmp
    table.append(line)
    js_rows.append(jr)

md = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
md += ["| " + " | ".join(l) + " |" for l in table]
head = [
    "CPU: %s; nproc %d; unset for the runs: %s" % (cpu, ncpu, overrides or "none was set"),
    "hog: %d busy-looping processes; load average before the run: %s" % (ncpu, load0),
    "command: %s" % cmdline,
    "squint: %s%s" % (squint, ("; base: %s" % base) if base else ""),
    "wall seconds per whole command, median of %d run(s); default/1 = default time / 1-thread time "
    "(above 1: the default threads are slower)%s; timed part took %.0f s"
    % (runs, "; new/base = main's default time / base's" if base else "", total),
]
print()
print("\n".join(head))
print()
print("\n".join(md))
doc = {
    "benchmark": "threads_busy",
    "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    "cpu_model": cpu, "nproc": ncpu, "hog_processes": ncpu, "loadavg_before": load0,
    "command": cmdline, "env_unset": overrides.split(), "squint": squint, "base": base or None, "runs": runs,
    "timeout_s": tmo, "timed_seconds": total, "unit": "wall seconds per whole command",
    "rows": js_rows, "markdown": "\n".join(md),
}
with open(out + ".tmp", "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
os.replace(out + ".tmp", out)
print("\n(JSON: %s)" % out)
PY
