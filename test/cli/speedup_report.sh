#!/usr/bin/env bash
# scripts/speedup_report.py on made-up trainer results (no training): N = 1, 2 reach the target,
# N = 4 ends at chance level (diverged), N = 8's trainer stopped on a non-finite loss (no JSON).
# The table says why for 4 and 8; speedup.csv parses with Python's csv module, one row per N,
# with the right k*, speedup and status (a status with a comma is quoted); with matplotlib (any
# of python3, /usr/bin/python3) both plots are written, else that part is skipped with a note.
#
# Usage: speedup_report.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
report="$src/scripts/speedup_report.py"

result() {  # result N K_STAR ACCURACY LR
  printf '{"world_size": %d, "lr": %s, "k_star": %d, "seconds": 10.5, "train_seconds": 2.5, "iterations": %d, "images_per_second": 5000, "comm_share": 0.25, "accuracy": %s}\n' \
    "$1" "$4" "$2" "$(($2 > 0 ? $2 : 400))" "$3" >"$tmp/n$1-seed1.json"
  printf 'world_size,iteration,epoch,images,seconds,train_seconds,train_loss,test_loss,test_accuracy\n' >"$tmp/n$1-seed1.csv"
  for k in 25 50 75 100; do
    printf '%d,%d,0,0,1,1,0.5,0.5,%s\n' "$1" "$k" "$(awk -v a="$3" -v k="$k" 'BEGIN { print a - (100 - k) / 1000 }')" >>"$tmp/n$1-seed1.csv"
  done
}
result 1 100 0.971 0.05
result 2 50 0.972 0.1
result 4 -1 0.1028 0.2
: >"$tmp/n8-seed1.json"
echo "train_lenet5: the loss is nan at iteration 12, lower --lr" >"$tmp/n8-seed1.txt"

python3 "$report" table "$tmp" --sizes "1 2 4 8" --seeds 1 --lr 0.05 --lr-scaling linear \
  --max-iterations 400 >"$tmp/table.txt" 2>"$tmp/table.err" || fail "table failed: $(cat "$tmp/table.err")"
grep -q "diverged: test accuracy 0.10 after 400 iterations" "$tmp/table.txt" || fail "table: N = 4 not diverged: $(cat "$tmp/table.txt")"
grep -q "diverged: train_lenet5: the loss is nan" "$tmp/table.txt" || fail "table: N = 8 not diverged: $(cat "$tmp/table.txt")"
python3 - "$tmp/speedup.csv" <<'PY' || fail "speedup.csv: $(cat "$tmp/speedup.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert [r["world_size"] for r in rows] == ["1", "2", "4", "8"], rows
assert [r["k_star"] for r in rows] == ["100", "50", "", ""], rows
assert [r["speedup"] for r in rows] == ["1", "2", "", ""], rows
assert rows[0]["status"] == "reached" and rows[2]["status"].startswith("diverged: test accuracy 0.10")
assert rows[3]["status"] == "diverged: train_lenet5: the loss is nan at iteration 12, lower --lr", rows[3]
assert [r["lr"] for r in rows[:3]] == ["0.05", "0.1", "0.2"], rows
raw = open(sys.argv[1]).read()
assert '"diverged: test accuracy 0.10 after 400 iterations"' not in raw  # no comma: not quoted
print("speedup.csv:", len(rows), "rows")
PY
# A status with a comma is quoted.
python3 - "$tmp/speedup.csv" <<'PY' || fail "a status with a comma is not quoted"
import sys
raw = open(sys.argv[1]).read()
assert '"diverged: train_lenet5: the loss is nan at iteration 12, lower --lr"' in raw, raw
PY

plot_python=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import matplotlib' 2>/dev/null; then plot_python=$p; break; fi
done
if [[ -n $plot_python ]]; then
  "$plot_python" "$report" speedup "$tmp/speedup.csv" --png "$tmp/speedup_vs_n.png" 2>"$tmp/plot.err" ||
    fail "speedup plot failed: $(cat "$tmp/plot.err")"
  "$plot_python" "$report" curves "$tmp" --sizes "1 2 4 8" --png "$tmp/speedup.png" 2>"$tmp/plot.err" ||
    fail "curves plot failed: $(cat "$tmp/plot.err")"
  for f in speedup_vs_n.png speedup.png; do
    [[ -s $tmp/$f ]] || fail "no $f"
  done
else
  echo "note: no python3 with matplotlib (python3-matplotlib): the plots are not checked"
fi

# Three seeds at N = 2, one of which diverged: k* is the median of the two that reached it, and
# the status says that one seed did not, and why.
mkdir -p "$tmp/seeds"
for seed in 1 2 3; do
  for n in 1 2; do
    k=$((seed * 100 / n)) acc=0.971
    [[ $n == 2 && $seed == 3 ]] && k=-1 acc=0.1009
    printf '{"world_size": %d, "lr": 0.05, "k_star": %d, "seconds": 10, "train_seconds": 2, "iterations": 400, "images_per_second": 5000, "comm_share": 0.25, "accuracy": %s}\n' \
      "$n" "$k" "$acc" >"$tmp/seeds/n$n-seed$seed.json"
  done
done
python3 "$report" table "$tmp/seeds" --sizes "1 2" --seeds "1 2 3" --lr 0.05 --max-iterations 400 \
  >"$tmp/seeds.txt" 2>&1 || fail "table over seeds failed: $(cat "$tmp/seeds.txt")"
python3 - "$tmp/seeds/speedup.csv" <<'PY' || fail "speedup.csv over seeds: $(cat "$tmp/seeds/speedup.csv")"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert [r["k_star"] for r in rows] == ["200", "75"], rows  # N = 2: median of 50 and 100
assert rows[0]["status"] == "reached", rows[0]
assert rows[1]["status"] == ("reached by 2 of 3 seeds; the others: diverged: test accuracy 0.10 "
                             "after 400 iterations"), rows[1]
PY

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "speedup_report.py: table, CSV and plots say what each world size did"
