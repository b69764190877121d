#!/usr/bin/env bash
# tools/gcl-launch blames the first rank to fail, not the lowest-numbered one that has failed by
# the time it looks. 4 ranks of launch_victim form a TCP job; rank V dies (SIGKILL, or exit 3)
# while the other three block receiving from it, so they fail moments later, naming V. Each
# trial checks that gcl-launch
#   - says "rank V was killed by SIGKILL" (or "exited with code 3") as the first failure,
#   - exits with V's status (137 = 128 + SIGKILL, or 3), not a later rank's 1,
#   - reports the other ranks' failures as coming after V's.
# Victims 3, 1, 2 and 0 in turn, several rounds: blaming the lowest (or highest) rank that
# has exited, or the last one, fails some trial. No timing is asserted.
# Usage: launch_first_failure.sh path/to/gcl-launch path/to/launch_victim [rounds]
set -u
launch=$1
victim_prog=$2
rounds=${3:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- gcl-launch's output:"; cat "$dir/out"; exit 1; }

trial() {  # victim how want_code want_words
  local v=$1 how=$2 want=$3 words=$4 code r
  # --timeout bounds a hang if the others did not notice (then the test fails on their
  # message, not on time); --grace is long so that only the ranks' own failures are seen.
  "$launch" --tag-output -p 4 --timeout 60 --grace 60 -- "$victim_prog" "$v" $how >"$dir/out" 2>&1
  code=$?
  grep -q "^gcl-launch: rank $v $words (the first rank to fail)$" "$dir/out" ||
    fail "victim $v ($how): gcl-launch did not name rank $v first ($words)"
  ((code == want)) || fail "victim $v ($how): gcl-launch exited with $code, not rank $v's $want"
  grep -q "^gcl-launch: rank $v $words first; exiting with $want$" "$dir/out" ||
    fail "victim $v ($how): the closing line does not blame rank $v"
  for r in 0 1 2 3; do
    ((r == v)) && continue
    grep -q "^gcl-launch: rank $r exited with code 1, after rank $v failed$" "$dir/out" ||
      fail "victim $v ($how): rank $r's own failure is not reported as coming after rank $v's"
    grep "^\[$r\] rank $r: " "$dir/out" | grep -q "rank $v" ||
      fail "victim $v ($how): rank $r's error does not name rank $v"
  done
  (($(grep -c "(the first rank to fail)" "$dir/out") == 1)) ||
    fail "victim $v ($how): more than one rank reported as the first to fail"
  echo "victim $v ($how): blamed, exit $code"
}

for ((round = 0; round < rounds; ++round)); do
  for v in 3 1 2 0; do trial "$v" kill 137 "was killed by SIGKILL"; done
done
trial 2 "exit 3" 3 "exited with code 3"
trial 0 "exit 3" 3 "exited with code 3"
echo PASS
