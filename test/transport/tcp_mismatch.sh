#!/usr/bin/env bash
# Processes that disagree about a call never pass for a success: under tools/gcl-launch, ranks
# that broadcast from different roots (at 2 ranks each believes it is the root, and it is their
# last call) or call different collectives make the job fail, and some rank says which calls
# the ranks disagreed about -- at 2, 4 and 8 ranks. The timeout is long (60 s): only the check,
# not a timeout, can end these jobs before ctest's own limit.
# Usage: tcp_mismatch.sh path/to/gcl-launch path/to/tcp_worker
set -u
launch=$1
worker=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$dir/out" 2>/dev/null; exit 1; }

for how in roots collectives; do
  for n in 2 4 8; do
    echo "== $how at $n ranks"
    "$launch" --tag-output -p "$n" --timeout 60 --grace 10 -- "$worker" "$how" >"$dir/out" 2>&1
    code=$?
    echo "gcl-launch exited with $code"
    ((code != 0)) || fail "the job succeeded, but its ranks disagreed ($how)"
    grep -q "ranks disagree about the call" "$dir/out" || fail "no rank said the ranks disagree"
    grep -m 1 "ranks disagree about the call" "$dir/out" | cut -c1-300
    if grep -q "timed out" "$dir/out"; then fail "a rank timed out instead of finding the disagreement"; fi
  done
done
echo "OK"
