#!/usr/bin/env bash
# benchmark/machine_limits --csv, small and without TCP: every row it measures parses, and the
# switch between tasks sharing one core is there for threads and for processes, 2 and 4 tasks,
# a positive number of nanoseconds (no bound on it: a loaded machine may take any time).
#
# Usage: machine_limits.sh MACHINE_LIMITS
set -u
prog=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$prog" --bytes 1M --threads 1 --tcp-bytes 0 -n 1 --csv >"$tmp/out.csv" 2>"$tmp/err" || {
  echo "FAIL: machine_limits exited with $?: $(cat "$tmp/err")"
  exit 1
}
python3 - "$tmp/out.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = []
for kind in ("threads", "processes"):
    for tasks in ("2", "4"):
        found = [r for r in rows if r["test"] == f"switch_{kind}" and r["threads"] == tasks]
        if len(found) != 1:
            bad.append(f"switch_{kind} with {tasks} tasks: {len(found)} rows")
        elif not float(found[0]["ns"]) > 0:
            bad.append(f"switch_{kind} with {tasks} tasks: ns {found[0]['ns']!r}")
        elif found[0]["GBps_copied"]:
            bad.append(f"switch_{kind}: a GB/s beside the latency")
if not any(r["test"] == "memcpy" and float(r["GBps_copied"]) > 0 for r in rows):
    bad.append("no memcpy row")
for b in bad:
    print("FAIL:", b)
if bad:
    print(open(sys.argv[1]).read())
    sys.exit(1)
print("machine_limits: the switches of threads and of processes, 2 and 4 tasks a core, and memcpy")
PY
