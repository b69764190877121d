#!/usr/bin/env bash
# tools/gcl-launch with the shm transport, as a user runs it (the program builds its transport
# with shm_options::from_env() from what gcl-launch exports: GCL_RANK, GCL_WORLD_SIZE, GCL_TOKEN,
# GCL_TIMEOUT):
#  1. 4 ranks run every collective with every algorithm, large messages copied once
#     (GCL_SHM_CMA=1): each rank
#     says its results are bit-identical to inproc's; exit 0;
#  2. the same with GCL_SHM_CMA=0 and 16 KiB rings: every message streamed through the rings;
#  3. 4 ranks in a long all_reduce loop, one SIGKILLed: the other three fail on their own (exit
#     code 1, not stopped by gcl-launch), each naming the dead rank, none by its (long) timeout;
#     gcl-launch names the killed rank and exits non-zero;
# and /dev/shm is as it was after each. Where it can (root), the script runs in a mount namespace
# of its own with an empty /dev/shm, so that other programs on the host using /dev/shm at the
# same time cannot make the comparison fail (or pass). Nothing here asserts how long anything
# took: timeouts are generous hang guards, the assertions are about who reported what.
# Usage: shm_launch.sh path/to/gcl-launch path/to/shm_worker
set -u
if [[ -z ${GCL_SHM_LAUNCH_NS:-} ]] && unshare --mount --propagation private true 2>/dev/null; then
  exec unshare --mount --propagation private env GCL_SHM_LAUNCH_NS=1 bash "$0" "$@"
fi
if [[ -n ${GCL_SHM_LAUNCH_NS:-} ]]; then
  mount -t tmpfs -o size=1m tmpfs /dev/shm || { echo "FAIL: cannot mount a tmpfs on /dev/shm"; exit 1; }
  echo "(in a mount namespace of its own, with an empty /dev/shm)"
fi
launch=$1
worker=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$dir/out" 2>/dev/null; exit 1; }
dev_shm() { ls -A /dev/shm 2>/dev/null | sort; }
before=$(dev_shm)
check_dev_shm() {
  local now
  now=$(dev_shm)
  [[ $now == "$before" ]] || fail "/dev/shm changed: before [$before], after [$now]"
}

echo "== 1. every collective and algorithm under gcl-launch -p 4, large messages offered"
GCL_SHM_CMA=1 "$launch" -p 4 --tag-output --timeout 60 -- "$worker" collectives >"$dir/out" 2>&1 || fail "exit code $?"
for r in 0 1 2 3; do
  grep -q "^\[$r\] rank $r: every collective and algorithm on 4 ranks over shm: bit-identical to inproc" "$dir/out" ||
    fail "rank $r did not report bit-identical results"
done
grep "^\[0\] rank 0" "$dir/out"
check_dev_shm

echo "== 2. the same, every message streamed through 16 KiB rings"
GCL_SHM_CMA=0 GCL_SHM_RING_BYTES=16384 "$launch" -p 4 --tag-output --timeout 60 -- "$worker" collectives >"$dir/out" 2>&1 ||
  fail "exit code $?"
for r in 0 1 2 3; do
  grep -q "^\[$r\] rank $r: every collective and algorithm on 4 ranks over shm: bit-identical to inproc .*large messages streamed" "$dir/out" ||
    fail "rank $r did not report bit-identical results, streamed"
done
check_dev_shm

echo "== 3. SIGKILL one rank during a long all_reduce loop"
# The ranks' timeout is far longer than noticing a hung-up socket takes, and gcl-launch's grace
# longer still: a rank released by its timeout prints "timed out", one that hangs is stopped by
# gcl-launch (then not exit code 1).
timeout_s=60
export GCL_WORKER_DIR=$dir
"$launch" -p 4 --tag-output --timeout $timeout_s --grace $((timeout_s + 30)) -- "$worker" loop 100000000 4096 >"$dir/out" 2>&1 &
launcher=$!
for _ in $(seq 600); do
  [[ -s "$dir/0.pid" && -s "$dir/1.pid" && -s "$dir/2.pid" && -s "$dir/3.pid" ]] && break
  sleep 0.1
done
[[ -s "$dir/0.pid" && -s "$dir/1.pid" && -s "$dir/2.pid" && -s "$dir/3.pid" ]] || { kill $launcher; fail "the ranks did not start"; }
kill -KILL "$(cat "$dir/2.pid")"
wait $launcher
code=$?
unset GCL_WORKER_DIR
echo "gcl-launch exited with $code"
((code != 0)) || fail "gcl-launch exited 0 after a rank was killed"
grep -q "gcl-launch: rank 2 was killed by SIGKILL" "$dir/out" || fail "gcl-launch did not name the killed rank"
! grep -q "gcl-launch: stopping the ranks still running" "$dir/out" || fail "gcl-launch had to stop ranks that did not notice the dead rank"
for r in 0 1 3; do
  grep -q "gcl-launch: rank $r exited with code 1" "$dir/out" || fail "rank $r did not exit with code 1"
  line=$(grep "^\[$r\] rank $r: " "$dir/out" | grep -v ": started$")
  [[ $line == *"rank 2"* ]] || fail "rank $r's error does not name rank 2"
  [[ $line != *"timed out"* ]] || fail "rank $r was released by its timeout, not by the dead rank's hang-up"
done
grep "^\[[013]\] rank" "$dir/out" | grep -v ": started$"
check_dev_shm
echo PASS
