#!/usr/bin/env bash
# Machine-readable output parses with Python's csv and json modules, whatever the label holds
# (quotes, commas), with threads and under tools/gcl-launch (no rank prefix by default); the
# sweep's --uneven-us mode; and the trainer's --json result is one JSON document on stdout (on a
# tiny synthetic MNIST).
#
# Usage: machine_output.sh SOURCE_DIR SWEEP [TRAIN_LENET5]   (SWEEP: the built all_reduce)
set -u
src=$1 sweep=$2 trainer=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
label='run 1, "quick", x'
small=(-b 4 -e 64 -f 4 -n 1 -w 0)

check_csv() {  # check_csv FILE: a header and rows, each with the label intact
  python3 - "$1" "$label" <<'PY' || fail "CSV of $1 does not parse: $(cat "$1")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert rows, "no rows"
for r in rows:
    assert r["label"] == sys.argv[2], r
    assert r["collective"] == "all_reduce" and int(r["size_B"]) > 0 and r["wrong"] == "0", r
print(f"csv: {len(rows)} rows, label {rows[0]['label']!r}")
PY
}
check_json() {
  python3 - "$1" "$label" <<'PY' || fail "JSON of $1 does not parse: $(cat "$1")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["label"] == sys.argv[2] and d["collective"] == "all_reduce" and d["wrong"] == 0, d
assert d["rows"] and all(r["wrong"] == 0 for r in d["rows"]), d
print(f"json: {len(d['rows'])} rows, label {d['label']!r}")
PY
}

"$sweep" -p 2 "${small[@]}" --csv --label "$label" >"$tmp/inproc.csv" || fail "inproc --csv failed"
check_csv "$tmp/inproc.csv"
"$sweep" -p 2 "${small[@]}" --json --label "$label" >"$tmp/inproc.json" || fail "inproc --json failed"
check_json "$tmp/inproc.json"
# Under the launcher: auto by default (a launcher started it), stdout as the ranks print it.
"$src/tools/gcl-launch" -p 2 --timeout 60 -- "$sweep" "${small[@]}" --csv --label "$label" \
  >"$tmp/tcp.csv" || fail "gcl-launch --csv failed"
check_csv "$tmp/tcp.csv"
grep -q ',gcl auto,' "$tmp/tcp.csv" || fail "under gcl-launch the sweep did not use auto (the default there): $(cat "$tmp/tcp.csv")"
"$src/tools/gcl-launch" -p 2 --timeout 60 -- "$sweep" "${small[@]}" --json --label "$label" \
  >"$tmp/tcp.json" || fail "gcl-launch --json failed"
check_json "$tmp/tcp.json"

# --uneven-us: the last rank works that long before each timed call (so the run takes at least
# the calls times the work: a lower bound, which no load can break), the rows say "uneven",
# and it cannot go with --barrier (each call timed alone after a barrier, where there is no
# step to be uneven in).
start=$(date +%s%N)
"$sweep" -p 2 -b 4 -e 4 -n 20 -w 0 --max-seconds 0 --uneven-us 5000 --csv >"$tmp/uneven.csv" ||
  fail "--uneven-us failed"
took_ms=$((($(date +%s%N) - start) / 1000000))
((took_ms >= 100)) || fail "--uneven-us 5000 with 20 calls took $took_ms ms: the last rank did not work 5 ms before each"
python3 - "$tmp/uneven.csv" <<'PY' || fail "--uneven-us rows: $(cat "$tmp/uneven.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 1 and rows[0]["mode"] == "uneven" and rows[0]["wrong"] == "0", rows
print(f"--uneven-us: mode {rows[0]['mode']}, {rows[0]['iters']} calls")
PY
if "$sweep" -p 2 -b 4 -e 4 -n 1 --uneven-us 10 --barrier >"$tmp/out" 2>"$tmp/err"; then
  fail "--uneven-us with --barrier was accepted"
fi
grep -q -- "--uneven-us" "$tmp/err" && grep -q -- "--barrier" "$tmp/err" ||
  fail "--uneven-us with --barrier: the error does not name both: $(cat "$tmp/err")"

if [[ -n $trainer ]]; then
  # 64 training and 16 test images of 28 x 28, random: enough for two steps and an evaluation.
  python3 "$src/test/cli/fake_mnist.py" "$tmp/mnist" 1
  "$trainer" --data "$tmp/mnist" -p 2 --batch 4 --max-iterations 2 --eval-every 1 \
    --eval-images 16 -q --json >"$tmp/train.json" 2>"$tmp/train.err" ||
    fail "train_lenet5 --json failed: $(cat "$tmp/train.err")"
  python3 - "$tmp/train.json" <<'PY' || fail "train_lenet5 --json: $(cat "$tmp/train.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["world_size"] == 2 and d["iterations"] == 2 and len(d["evaluations"]) == 2, d
assert 0 <= d["accuracy"] <= 1, d
print(f"train_lenet5 --json: {d['iterations']} iterations, accuracy {d['accuracy']}")
PY
fi
echo "machine-readable output parses"
