#!/usr/bin/env bash
# A job's end waits for no timer: 10 jobs of 4 ranks under tools/gcl-launch, one all_reduce of
# 1 MiB (ring) each. Every rank says bye as it leaves and shuts the sending side of its
# connections; a peer still in the collective may ask it where it is after that, and the
# answer's write fails. Written with asio::async_write, the next write to that peer waited for
# an edge of readiness that a closed connection never gives, and the rank's destructor waited
# out the whole timeout (engine.hpp, start_write), which it says (shut_down): no rank may. Seen
# with one job in ten under ThreadSanitizer beside another test (CI runs two at once). The
# timeout, 30 s, is what a hang costs here; a job takes 1-5 s under ThreadSanitizer beside
# another test and two busy loops, so a slow machine does not reach it.
# Usage: tcp_exit.sh path/to/gcl-launch path/to/tcp_worker
set -u
launch=$1
worker=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
for job in $(seq 10); do
  "$launch" --tag-output -p 4 --timeout 30 -- "$worker" loop 1 262144 >"$out" 2>&1 ||
    fail "job $job failed"
  grep -q "waited the whole timeout" "$out" &&
    fail "job $job: a rank waited out its timeout at its end"
  [[ $(grep -c "1 all_reduce done" "$out") == 4 ]] || fail "job $job: not every rank finished"
done
echo "OK: 10 jobs, no rank waited out its timeout"
