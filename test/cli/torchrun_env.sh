#!/usr/bin/env bash
# gcl-launch as torchrun: --nproc-per-node 4 starts 4 ranks that find what torchrun exports.
#  1. A program that reads only RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and
#     MASTER_PORT (Python, no gcl) meets on MASTER_ADDR:MASTER_PORT: rank 0 listens, the others
#     connect and say who they are; rank 0 must hear ranks 1..3, each once.
#  2. hello with every GCL_* variable removed: tcp_options::from_env reads torchrun's variables,
#     and without --transport the transport is auto (a launcher started it: shared memory here,
#     TCP to other hosts): 4 greetings, one per rank (the ranks print in turn, but each process's
#     output reaches the launcher through a pipe of its own, so the relayed order may differ).
#  3. Never two silent worlds: under a launcher, --transport inproc is refused with one line;
#     and with Open MPI's rank variables but no MASTER_ADDR, hello stops and says what is missing.
#
# Usage: torchrun_env.sh SOURCE_DIR HELLO
set -u
src=$1 hello=$2
launch=$src/tools/gcl-launch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [[ -f $tmp/out ]] && cat "$tmp/out"; exit 1; }

cat >"$tmp/peer.py" <<'PY'
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
assert local == rank and local_world == world, (rank, local, world, local_world)
if rank == 0:
    s = socket.create_server((addr, port))
    s.settimeout(60)
    seen = []
    while len(seen) < world - 1:
        c, _ = s.accept()
        seen.append(int(c.makefile().readline()))
        c.close()
    assert sorted(seen) == list(range(1, world)), seen
    print(f"rank 0 of {world}: heard ranks {sorted(seen)}", flush=True)
else:
    deadline = time.monotonic() + 60
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    c.sendall(f"{rank}\n".encode())
    c.close()
PY
echo "== 1. a torchrun program"
"$launch" --nproc-per-node 4 --timeout 60 -- python3 "$tmp/peer.py" >"$tmp/out" 2>&1 ||
  fail "the torchrun-style program failed"
grep -qx "rank 0 of 4: heard ranks \[1, 2, 3\]" "$tmp/out" || fail "rank 0 did not hear every rank"

echo "== 2. hello with torchrun's variables only"
"$launch" --nproc-per-node 4 --timeout 60 -- env -u GCL_RANK -u GCL_WORLD_SIZE -u GCL_MASTER_ADDR \
  -u GCL_MASTER_PORT -u GCL_TOKEN -u GCL_BOUND_CPU "$hello" --name torchrun >"$tmp/out" 2>&1 ||
  fail "hello under --nproc-per-node 4 failed"
[[ $(sort "$tmp/out") == $'Rank 0: Hello, torchrun!\nRank 1: Hello, torchrun!\nRank 2: Hello, torchrun!\nRank 3: Hello, torchrun!' ]] ||
  fail "hello did not greet once per rank"
"$launch" -np 2 --timeout 60 -- "$hello" >"$tmp/out" 2>&1 || fail "hello under -np 2 failed"
(($(grep -c "Hello" "$tmp/out") == 2)) || fail "gcl-launch -np 2 -- hello: not 2 greetings"

echo "== 3. no silent worlds"
"$launch" -p 2 --timeout 60 -- "$hello" --transport inproc >"$tmp/out" 2>&1 &&
  fail "hello --transport inproc under a launcher succeeded"
(($(grep -c "each would run a world of its own" "$tmp/out") == 2)) ||
  fail "hello --transport inproc under a launcher did not say why (once per rank)"
! grep -q Hello "$tmp/out" || fail "hello --transport inproc under a launcher greeted"
env -u GCL_MASTER_ADDR -u MASTER_ADDR OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 \
  timeout 60 "$hello" >"$tmp/out" 2>&1 && fail "hello with Open MPI's variables and no MASTER_ADDR succeeded"
grep -q "MASTER_ADDR" "$tmp/out" || fail "hello did not say that MASTER_ADDR is missing"
! grep -q Hello "$tmp/out" || fail "hello greeted without a job"
echo "torchrun's variables: OK"
