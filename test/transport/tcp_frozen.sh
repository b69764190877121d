#!/usr/bin/env bash
# A frozen rank (SIGSTOP: a debugger, a swapped-out or hung process) is named by every survivor.
# 4 ranks under tools/gcl-launch run an all_reduce loop; rank 2 is stopped. The survivors time
# out (3 s here), ask each other where they are, and each one's error -- its own, or the one it
# received from the first survivor that timed out -- must say that rank 2 does not answer; no
# survivor may blame a live rank instead, and gcl-launch stops rank 2 as soon as the survivors
# are gone. Run at a small and a 1 MiB message size.
# Usage: tcp_frozen.sh path/to/gcl-launch path/to/tcp_worker
set -u
launch=$1
worker=$2
dir=$(mktemp -d)
stopped=""
cleanup() {
  [[ -n "$stopped" ]] && kill -KILL "$stopped" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$dir/out" 2>/dev/null; exit 1; }

export GCL_WORKER_DIR=$dir
for count in 64 262144; do
  echo "== SIGSTOP rank 2 of 4 in an all_reduce loop of $count floats"
  rm -f "$dir"/*.pid
  # --grace: how long after the first survivor fails gcl-launch lets the others fail on their
  # own before it stops the rest (and says that rank 2 was stopped); once every rank left is
  # stopped (the survivors have failed), it stops them at once and says so without the grace's
  # seconds. The grace is the one time bound here: 5x the ranks' 3 s timeout. Each survivor
  # times out by itself (3 s, then 1 s of its own running time for its peers' answers, 10 s of
  # wall time at most when the machine freezes it), and the first one's abort frames release
  # the others at once, so only a survivor that does not fail by itself, not a loaded machine
  # or a sanitizer, can exceed it.
  "$launch" --tag-output -p 4 --timeout 3 --grace 15 -- "$worker" loop 100000000 "$count" >"$dir/out" 2>&1 &
  launcher=$!
  started() { [[ -s "$dir/0.pid" && -s "$dir/1.pid" && -s "$dir/2.pid" && -s "$dir/3.pid" ]]; }
  for _ in $(seq 600); do
    started && break
    sleep 0.1
  done
  started || { kill $launcher; fail "the ranks did not start"; }
  sleep 0.5
  stopped=$(cat "$dir/2.pid")
  kill -STOP "$stopped"
  wait $launcher
  code=$?
  kill -KILL "$stopped" 2>/dev/null
  stopped=""
  echo "gcl-launch exited with $code"
  ((code != 0)) || fail "gcl-launch exited 0 with a rank stopped"
  grep -q "gcl-launch: .*rank 2 was stopped (SIGSTOP" "$dir/out" || fail "gcl-launch did not say rank 2 was stopped"
  grep -q "gcl-launch: stopping the ranks still running after rank [013] failed; rank 2 was stopped" "$dir/out" ||
    fail "gcl-launch waited out the grace, not stopping rank 2 once the survivors had failed"
  for r in 0 1 3; do
    line=$(grep "^\[$r\] rank $r: " "$dir/out" | grep -v ": started$" | tail -n 1)
    [[ -n "$line" ]] || fail "rank $r printed no error"
    echo "$line" | cut -c1-300
    [[ "$line" == *"rank 2 does not answer"* ]] || fail "rank $r's error does not name the stopped rank 2"
  done
done
echo "OK"
