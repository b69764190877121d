#!/usr/bin/env bash
# benchmark/report.py on made-up sweeps (no benchmark runs): three repetitions of gcl's threads
# and Open MPI's vader at P = 2, one size, and made-up machine limits. The table gives the ratio of the medians and, in
# parentheses, the lowest and highest ratio of one repetition's two runs; a repetition that one
# side lacks is left out of the range, and a row with fewer than two common repetitions has no
# range.
#
# Usage: bench_report.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

sweep() {  # sweep FILE LABEL IMPL "SIZE:TIME ..."
  {
    echo "collective,impl,algorithm,label,ranks,size_B,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,wrong,pred_us,mode,iters,mean_us"
    for st in $4; do
      echo "all_reduce,$3,by_size,$2,2,${st%%:*},1,float,sum,-1,${st#*:},1,1,0,,b2b,10,${st#*:}"
    done
  } >"$tmp/res/$1.csv"
}
mkdir -p "$tmp/res"
# 4 B: gcl 1, 2, 1, 4 us in repetitions 1 to 4; vader 3, -, 2, 4 (its repetition 2 lacks the
# size): medians 1.5 and 3 (ratio 2.00); per repetition 3, 2 and 1 (pairing by position instead
# would give 3, 1 and 4). 64 B: vader's repetition 1 only: no range.
sweep r1_all_reduce_p2_inproc_by_size inproc "gcl inproc" "4:1 64:1"
sweep r2_all_reduce_p2_inproc_by_size inproc "gcl inproc" "4:2 64:1"
sweep r3_all_reduce_p2_inproc_by_size inproc "gcl inproc" "4:1 64:1"
sweep r4_all_reduce_p2_inproc_by_size inproc "gcl inproc" "4:4"
sweep r1_all_reduce_p2_vader vader "Open MPI" "4:3 64:2"
sweep r2_all_reduce_p2_vader vader "Open MPI" ""
sweep r3_all_reduce_p2_vader vader "Open MPI" "4:2"
sweep r4_all_reduce_p2_vader vader "Open MPI" "4:4"

# machine_limits' rows: a bandwidth, and the line's round trip and the switches, latencies
# (column ns only), which go in sentences of their own, not in the table of GB/s. On one core
# the sweeps' P = 2 is two ranks a core: the floor of a call is two switches.
cat >"$tmp/res/limits.csv" <<'CSV'
test,threads,bytes,GBps_copied,GBps_traffic,ns
line_round_trip,2,64,,,123.4
switch_threads,2,,,,2000.0
switch_threads,4,,,,2500.0
switch_processes,2,,,,5000.0
switch_processes,4,,,,9000.0
memcpy,1,268435456,5.850,11.700,
CSV
echo "machine=vm, 1 cores visible" >"$tmp/res/meta.txt"

python3 "$src/benchmark/report.py" "$tmp/res" "$tmp/doc.md" "$tmp/img" >"$tmp/out" 2>&1 ||
  fail "report.py failed: $(cat "$tmp/out")"
row4=$(grep '^| 4 B |' "$tmp/doc.md")
row64=$(grep '^| 64 B |' "$tmp/doc.md")
[[ $row4 == *"**2.00** (1.00-3.00)"* ]] || fail "4 B: not the ratio 2.00 with range 1.00-3.00: $row4"
[[ $row64 == *"**2.00** |"* ]] || fail "64 B: not the ratio 2.00 without a range: $row64"
grep -q "lowest and highest" "$tmp/doc.md" || fail "the range is not explained in doc.md"
grep -q '^| memcpy | 1 | 256 MiB | 5.85 | 11.70 |' "$tmp/doc.md" || fail "no memcpy row in the limits"
grep -q '^| line_round_trip' "$tmp/doc.md" && fail "the round trip, a latency, is a row of GB/s"
grep -q 'passing a counter through one line.*\*\*123 ns\*\*' "$tmp/doc.md" ||
  fail "the round trip's 123 ns is not said: $(grep -i -A1 'round trip between two cores' "$tmp/doc.md")"
grep -q '^| switch_' "$tmp/doc.md" && fail "a switch, a latency, is a row of GB/s"
switches=$(grep -A6 '^A switch between tasks' "$tmp/doc.md" | tr '\n' ' ')
[[ $switches == *"threads **2.0 us** (2 tasks) and **2.5 us** (4)"* &&
  $switches == *"processes **5.0 us** and **9.0 us**"* ]] ||
  fail "the switches' 2.0, 2.5, 5.0 and 9.0 us are not said: $switches"
[[ $switches == *"at P = 2 on 1 cores, 2 x 5.0 = 10 us a call for processes"* &&
  $switches == *"against 2 x 2.0 = 4 us for threads"* ]] ||
  fail "the floor of a call at P = 2 on one core (two switches) is not said: $switches"

if ((failures)); then
  exit 1
fi
echo "report.py: ratios of the medians, with the repetitions' range where two or more pair up;"
echo "the machine's limits, the latencies apart from the bandwidths, and the floor of a call where"
echo "ranks share a core"
