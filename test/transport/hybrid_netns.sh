#!/usr/bin/env bash
# hybrid_transport across two "hosts": two network namespaces (tools/netns-lab.sh), two
# processes in each. The ranks of one namespace share its abstract Unix sockets and so a shm
# segment; between namespaces only TCP reaches. Ranks 0 and 2 run in the first namespace, 1 and
# 3 in the second (interleaved, so that a host group is not a range of ranks).
#
#   GCL_TRANSPORT=auto: every all_reduce correct, each rank reports shm to its namespace
#     neighbour (and itself) and TCP to the others;
#   GCL_TRANSPORT=shm: the setup fails, saying that every rank must be on this host.
#
#   hybrid_netns.sh path/to/hybrid_worker      (root; exit 77 = skipped)
set -u
worker=${1:?usage: hybrid_netns.sh path/to/hybrid_worker}
id=gclh$$
skip() { echo "SKIP: $*"; exit 77; }

[[ $(id -u) == 0 ]] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"

source "$(dirname "${BASH_SOURCE[0]}")/../../tools/netns-lab.sh"
cleanup() {
  netns_lab_down "$id" 2
  rm -rf "${out:-}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_lab_up "$id" 2 10.78.0.
case $? in
  0) ;;
  2) skip "cannot create a network namespace here (ip netns add failed)" ;;
  *) echo "FAIL: could not set up the namespaces"; exit 1 ;;
esac
for _ in $(seq 50); do
  ip netns exec "$id-r1" ping -c1 -W1 10.78.0.1 >/dev/null 2>&1 && break
  command -v ping >/dev/null || { sleep 1; break; }
  sleep 0.1
done

out=$(mktemp -d)
run_job() {  # run_job mode timeout: rank i in namespace i % 2; returns how many ranks failed
  local mode=$1 timeout=$2 pids=() i failed=0
  for i in 0 1 2 3; do
    ip netns exec "$id-r$((i % 2))" env GCL_RANK=$i GCL_WORLD_SIZE=4 GCL_MASTER_ADDR=10.78.0.1 \
      GCL_MASTER_PORT=29578 GCL_TOKEN="$id" GCL_TIMEOUT="$timeout" GCL_TRANSPORT="$mode" \
      "$worker" algorithms >"$out/$i" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed=$((failed + 1)); done
  return $failed
}

if ! run_job auto 30; then
  for i in 0 1 2 3; do echo "rank $i:"; cat "$out/$i"; done
  echo "FAIL: GCL_TRANSPORT=auto"
  exit 1
fi
want=(stst tsts stst tsts)
for i in 0 1 2 3; do
  grep -q "all_reduce with every algorithm on 4 ranks: OK" "$out/$i" || { cat "$out/$i"; echo "FAIL: rank $i"; exit 1; }
  grep -q "rank $i: paths ${want[$i]}" "$out/$i" || { cat "$out/$i"; echo "FAIL: rank $i's paths (want ${want[$i]})"; exit 1; }
done
echo "GCL_TRANSPORT=auto: OK ($(grep -h paths "$out"/* | tr '\n' ';'))"

if run_job shm 2; then
  echo "FAIL: GCL_TRANSPORT=shm across two namespaces succeeded"
  exit 1
fi
for i in 0 1 2 3; do
  grep -q "GCL_TRANSPORT=shm every rank must run on this host" "$out/$i" || { cat "$out/$i"; echo "FAIL: rank $i does not say why"; exit 1; }
done
echo "GCL_TRANSPORT=shm across namespaces: failed as it should:"
for i in 0 1 2 3; do sed 's/^/  /' "$out/$i"; done
echo PASS
