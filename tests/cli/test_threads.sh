#!/usr/bin/env bash
# Threads that never hurt (libquant/cpu/par_threads.h, cpu_quota.h, threads.h), end to
# end:
# - in a real cgroup limited to one CPU (v1 cpu.cfs_quota_us or v2 cpu.max,
#   where this machine lets the test make one; SKIPPED and said so where it
#   does not: unit-threads tests the parser on sample trees), the default is
#   1 thread, 1.5 CPUs give 2, OMP_NUM_THREADS and --threads still win, and
#   bench / serve --instances and tune plan no more cores than the quota;
# - the OpenMP wait policy: libgomp starts with a short GOMP_SPINCOUNT
#   unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT;
# - with the real thread rule (no SQUINT_THREAD_MIN_NS), the default and
#   --threads 1 give the same bytes.
# usage: test_threads.sh SQUINT GEN_FIXTURE
set -uo pipefail
SQ=$1
GEN=$2
W=$(mktemp -d /tmp/squint-threads-XXXXXX)
cleanup() {
  # the cgroups this run made (make_cgroup runs in a subshell: found by name)
  for d in /sys/fs/cgroup/cpu/squint-test-$$-* /sys/fs/cgroup/squint-test-$$-*; do
    [[ -d $d ]] && rmdir "$d" 2>/dev/null
  done
  # the cpu controller, if this run enabled it for the root's children
  [[ -f $W/enabled-cpu ]] && echo -cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"
unset SQUINT_THREAD_MIN_NS OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT
PY=/usr/bin/python3
CORES=$(nproc)

"$GEN" "$W/m" --shape tiny --seed 3 >/dev/null &&
  "$SQ" calibrate "$W/m" --samples 16 --quiet -o "$W/m.sqc" 2>/dev/null &&
  "$SQ" quantize "$W/m" --calib "$W/m.sqc" -o "$W/m.sqm" >/dev/null 2>&1 || {
  echo "FAIL - fixture"
  exit 1
}
for i in $(seq 1 96); do echo "sentence number $i about threads and quotas, $((i * 7)) words"; done >"$W/texts.txt"

# ---- the cgroup quota ----
# make_cgroup QUOTA_US PERIOD_US: a fresh cgroup with that CPU limit; prints
# its folder (whose cgroup.procs takes a pid), nothing when it cannot.
make_cgroup() {
  local q=$1 p=$2 d
  [[ $(id -u) -eq 0 ]] || return 0
  if [[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then # v1 (or hybrid)
    d=/sys/fs/cgroup/cpu/squint-test-$$-$q
    if mkdir "$d" 2>/dev/null; then
      echo "$p" >"$d/cpu.cfs_period_us" 2>/dev/null && echo "$q" >"$d/cpu.cfs_quota_us" 2>/dev/null &&
        echo "$d"
      return 0
    fi
  fi
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
    if ! grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
      echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null && : >"$W/enabled-cpu"
    fi
    d=/sys/fs/cgroup/squint-test-$$-$q
    if mkdir "$d" 2>/dev/null; then
      echo "$q $p" >"$d/cpu.max" 2>/dev/null && echo "$d"
    fi
  fi
  return 0
}
# in_cgroup DIR command...: the command, run inside the cgroup
in_cgroup() {
  local d=$1
  shift
  sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$d" "$@"
}
threads_of() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['threads'])" "$1"; }
run_t() { "$@" --reference "$W/m" --input "$W/texts.txt" --report "$W/t.json" --quiet >/dev/null 2>&1 && threads_of "$W/t.json"; }

one=$(make_cgroup 100000 100000)
if [[ $CORES -lt 2 ]]; then
  echo "SKIP - cgroup quota checks: one usable core (the affinity mask alone gives 1 thread)"
elif [[ -z $one ]] || ! in_cgroup "$one" true 2>/dev/null; then
  echo "SKIP - cgroup quota checks: this machine does not let the test make a cgroup with a CPU limit (not root, or no writable cpu controller); unit-threads tests the quota parser"
else
  [[ $(run_t in_cgroup "$one" "$SQ" embed-run "$W/m.sqm") == 1 ]] &&
    pass "cgroup quota 1 CPU: the default is 1 thread" || fail "cgroup quota of 1 CPU ignored"
  [[ $(OMP_NUM_THREADS=2 run_t in_cgroup "$one" "$SQ" embed-run "$W/m.sqm") == 2 ]] &&
    pass "cgroup quota 1 CPU: OMP_NUM_THREADS=2 wins" || fail "OMP_NUM_THREADS lost under a quota"
  [[ $(run_t in_cgroup "$one" "$SQ" embed-run "$W/m.sqm" --threads 3) == 3 ]] &&
    pass "cgroup quota 1 CPU: --threads 3 wins" || fail "--threads lost under a quota"
  expect_error "cgroup quota 1 CPU: bench --instances 2 refused" "this process may use 1" "" \
    -- in_cgroup "$one" "$SQ" bench "$W/m.sqm" --instances 2
  expect_error "cgroup quota 1 CPU: serve --instances 2 refused" "this process may use 1" "" \
    -- timeout 30 sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$one" "$SQ" serve "$W/m.sqm" --instances 2 --port 0
  if in_cgroup "$one" "$SQ" tune "$W/m.sqm" --exhaustive --rounds 1 --budget 0.3 --seq 8 --max-batch 1 \
       --json -o "$W/tune.json" >"$W/tune.out" 2>/dev/null &&
     "$PY" -c "import json,sys; o=json.load(open(sys.argv[1])); assert o['usable_cores']==1, o; assert all(p['instances']*p['threads']==1 for p in o['points']), o['points']" "$W/tune.out"; then
    pass "cgroup quota 1 CPU: tune plans 1 core"
  else
    fail "tune under a 1-CPU quota: $(head -c 400 "$W/tune.out")"
  fi
  # the plan counts 1 core, but the worker is not pinned to the first one
  # (a quota bounds time, not CPUs): it keeps the whole mask
  timeout 30 sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$one" "$SQ" serve "$W/m.sqm" \
    --instances 1 --port 0 2>"$W/srv.err" &
  srv=$!
  for _ in $(seq 150); do grep -q "ready" "$W/srv.err" 2>/dev/null && break; sleep 0.1; done
  kill -TERM $srv 2>/dev/null
  wait $srv 2>/dev/null
  mask=$("$PY" -c "import os; c=sorted(os.sched_getaffinity(0)); print(f'{c[0]}-{c[-1]}' if c==list(range(c[0],c[-1]+1)) else '')")
  if [[ -n $mask ]] && grep -q "CPUs $mask," "$W/srv.err"; then
    pass "cgroup quota 1 CPU: serve --instances 1 worker keeps the whole mask (CPUs $mask)"
  elif [[ -z $mask ]]; then
    echo "SKIP - pinning under a quota: the affinity mask is not one range"
  else
    fail "serve worker under a quota: $(grep -m1 worker "$W/srv.err")"
  fi
  if [[ $CORES -ge 3 ]]; then
    one5=$(make_cgroup 150000 100000)
    [[ -n $one5 && $(run_t in_cgroup "$one5" "$SQ" embed-run "$W/m.sqm") == 2 ]] &&
      pass "cgroup quota 1.5 CPUs: 2 threads (rounded up)" || fail "quota 1.5 CPUs: not 2 threads"
  else
    echo "SKIP - 1.5-CPU quota check: it needs 3 usable cores to tell 2 from the mask's count"
  fi
fi

# ---- the OpenMP wait policy ----
# libgomp prints the settings it read at load with OMP_DISPLAY_ENV=verbose:
# the short spin unless the user chose one (cmd/omp_wait_policy.c).
spin_of() { OMP_DISPLAY_ENV=verbose "$@" 2>&1 >/dev/null | sed -n "s/.*GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p" | tr '\n' ' '; }
got=$(spin_of "$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/w.npy" --quiet)
[[ $got == "10000 " ]] && pass "libgomp loads with the short spin ($got)" || fail "no short spin: '$got'"
got=$(GOMP_SPINCOUNT=123 spin_of "$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/w.npy" --quiet)
[[ $got == "123 " ]] && pass "GOMP_SPINCOUNT=123 kept" || fail "user's GOMP_SPINCOUNT: '$got'"
got=$(OMP_WAIT_POLICY=passive spin_of "$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/w.npy" --quiet)
[[ $got == "0 " ]] && pass "OMP_WAIT_POLICY=passive kept (spin $got)" || fail "user's OMP_WAIT_POLICY: '$got'"
# ---- the real rule (no SQUINT_THREAD_MIN_NS), default vs 1 thread: the same
# bytes (on this tiny fixture most operations run on one thread either way;
# the forced-thread comparisons are in cli-embed, unit-encoder and others) ----
"$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/d.npy" --batch 32 --quiet &&
  "$SQ" embed "$W/m.sqm" --input "$W/texts.txt" --output "$W/one.npy" --batch 32 --threads 1 --quiet &&
  cmp -s "$W/d.npy" "$W/one.npy" && pass "default threads = 1 thread, byte for byte" ||
  fail "default threads and 1 thread differ"

finish
