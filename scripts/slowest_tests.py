#!/usr/bin/env python3
"""The slowest tests of the last `meson test` run in a build folder, each
with its timeout and the share of it used, so a suite creeping toward its
timeouts (a loaded machine, a grown test) shows before it fails. Reads
BUILD/meson-logs/testlog.json (the run) and BUILD/meson-info/intro-tests.json
(the timeouts). Reports only: it never fails a run on timing.

usage: slowest_tests.py BUILD [--count N] [--multiplier M]
  --count N       how many to list (default 5)
  --multiplier M  the run's --timeout-multiplier (default 1)
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--multiplier", type=float, default=1.0)
    a = ap.parse_args()
    log = os.path.join(a.build, "meson-logs", "testlog.json")
    intro = os.path.join(a.build, "meson-info", "intro-tests.json")
    try:
        timeouts = {t["name"]: t.get("timeout") for t in json.load(open(intro))}
        runs = []
        for line in open(log):
            line = line.strip()
            if line:
                runs.append(json.loads(line))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"slowest_tests: cannot read {a.build}'s test log: {e}", file=sys.stderr)
        return 2
    rows = []
    for r in runs:
        # testlog names are "project / test"
        name = r.get("name", "?").split(" / ", 1)[-1]
        dur = float(r.get("duration") or 0)
        t = timeouts.get(name)
        limit = t * a.multiplier if t else None
        rows.append((dur, name, limit, r.get("result", "?")))
    rows.sort(reverse=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"slowest {min(a.count, len(rows))} of {len(rows)} tests in {a.build} "
          f"(timeouts x{a.multiplier:g}; load average now {load:.1f}):")
    def show(dur, name, limit, result):
        if not limit:
            print(f"  {name:32s} {dur:8.1f} s (no timeout) {result}")
            return
        flag = "  over half its timeout" if dur > 0.5 * limit else ""
        print(f"  {name:32s} {dur:8.1f} s of {limit:6.0f} s ({dur / limit:4.0%}) {result}{flag}")

    for row in rows[: a.count]:
        show(*row)
    # any other test past half of its (shorter) timeout
    over = [r for r in rows if r[2] and r[0] > 0.5 * r[2]]
    for row in over:
        if row not in rows[: a.count]:
            show(*row)
    if over:
        print(f"  {len(over)} test(s) used more than half of their timeout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
