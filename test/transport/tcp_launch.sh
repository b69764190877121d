#!/usr/bin/env bash
# tools/gcl-launch with the TCP transport, as a user runs it:
#  1. 4 ranks run all_reduce with every algorithm: exit 0, every line prefixed by its rank;
#  2. 4 ranks in a long all_reduce loop, one SIGKILLed: the other three fail on their own (exit
#     code 1, not stopped by gcl-launch), each naming the dead rank, and none by its timeout (a
#     long one: the dead peer's closed connection, not waiting, must be what ends them);
#     gcl-launch exits non-zero;
#  3. a stranger (garbage, connect-and-close) on rank 0's port during a job changes nothing.
# Nothing here asserts how long anything took: timeouts and waits are generous hang guards, the
# assertions are about who reported what.
# Usage: tcp_launch.sh path/to/gcl-launch path/to/tcp_worker
set -u
launch=$1
worker=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$dir/out" 2>/dev/null; exit 1; }

echo "== 1. every algorithm under gcl-launch -p 4"
"$launch" --tag-output -p 4 --timeout 60 -- "$worker" algorithms >"$dir/out" 2>&1 || fail "exit code $?"
for r in 0 1 2 3; do
  grep -q "^\[$r\] rank $r: all_reduce with every algorithm on 4 ranks: OK" "$dir/out" || fail "rank $r did not report OK"
done

echo "== 2. SIGKILL one rank during a long all_reduce loop"
# The ranks' timeout is far longer than noticing a closed connection can take, and the grace
# after which gcl-launch stops the ranks still running is longer still: a rank that is released
# by its timeout prints "timed out", one that hangs is stopped by gcl-launch (not exit code 1).
timeout_s=60
export GCL_WORKER_DIR=$dir
"$launch" --tag-output -p 4 --timeout $timeout_s --grace $((timeout_s + 30)) -- "$worker" loop 100000000 4096 >"$dir/out" 2>&1 &
launcher=$!
for _ in $(seq 600); do
  [[ -s "$dir/0.pid" && -s "$dir/1.pid" && -s "$dir/2.pid" && -s "$dir/3.pid" ]] && break
  sleep 0.1
done
[[ -s "$dir/0.pid" && -s "$dir/1.pid" && -s "$dir/2.pid" && -s "$dir/3.pid" ]] || { kill $launcher; fail "the ranks did not start"; }
sleep 0.5
kill -KILL "$(cat "$dir/2.pid")"
wait $launcher
code=$?
echo "gcl-launch exited with $code"
((code != 0)) || fail "gcl-launch exited 0 after a rank was killed"
grep -q "gcl-launch: rank 2 was killed by SIGKILL" "$dir/out" || fail "gcl-launch did not name the killed rank"
! grep -q "gcl-launch: stopping the ranks still running" "$dir/out" || fail "gcl-launch had to stop ranks that did not notice the dead rank"
for r in 0 1 3; do
  grep -q "gcl-launch: rank $r exited with code 1" "$dir/out" || fail "rank $r did not exit with code 1"
  line=$(grep "^\[$r\] rank $r: " "$dir/out" | grep -v ": started$")
  [[ $line == *"rank 2"* ]] || fail "rank $r's error does not name rank 2"
  [[ $line != *"timed out"* ]] || fail "rank $r was released by its timeout, not by the dead rank's closed connection"
done
grep "^\[[013]\] rank" "$dir/out" | grep -v ": started$"

echo "== 3. strangers on rank 0's port during a job"
unset GCL_WORKER_DIR
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$launch" --tag-output -p 3 --port "$port" --timeout 60 -- "$worker" loop 3000 1000 >"$dir/out" 2>&1 &
launcher=$!
sleep 0.3
for _ in 1 2 3; do
  if command -v nc >/dev/null; then
    printf 'garbage' | nc -q 1 127.0.0.1 "$port" >/dev/null 2>&1 || true  # -q: netcat-openbsd
    nc -z 127.0.0.1 "$port" >/dev/null 2>&1 || true
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'garbage' >&3) 2>/dev/null || true
  fi
  sleep 0.2
done
wait $launcher || fail "the job failed after strangers connected (exit $?)"
grep -q "refused a connection" "$dir/out" || echo "(no stranger reached the port before the job ended)"
for r in 0 1 2; do grep -q "^\[$r\] rank $r: 3000 all_reduce done" "$dir/out" || fail "rank $r did not finish"; done
echo PASS
