#!/usr/bin/env bash
# gcl over a real network stack: one rank per network namespace, the namespaces joined by veth
# pairs to a bridge that lives in a namespace of its own, addresses 10.77.0.0/24 and
# fd00:77::/64 that exist only inside these namespaces (nothing is added to the host's
# namespace, nothing is routed). Runs over IPv4, then over IPv6.
# Runs all_reduce with every algorithm across them and checks the results exactly.
#
#   tcp_netns.sh path/to/tcp_worker [ranks]      (root; exit 77 = skipped)
#
# Needs iproute2 (ip). Namespaces are always removed on exit.
set -u
worker=${1:?usage: tcp_netns.sh path/to/tcp_worker [ranks]}
ranks=${2:-5}
id=gcl$$
skip() { echo "SKIP: $*"; exit 77; }

[[ $(id -u) == 0 ]] || skip "not root (network namespaces need CAP_SYS_ADMIN)"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"

source "$(dirname "${BASH_SOURCE[0]}")/../../tools/netns-lab.sh"
cleanup() {
  netns_lab_down "$id" "$ranks"
  rm -rf "${out:-}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_lab_up "$id" "$ranks" 10.77.0. fd00:77::
case $? in
  0) ;;
  2) skip "cannot create a network namespace here (ip netns add failed)" ;;
  *) echo "FAIL: could not set up the namespaces"; exit 1 ;;
esac
((NETNS_LAB_V6)) || no_v6=1
# The bridge needs a moment to forward (no STP by default, but the links come up async).
for _ in $(seq 50); do
  ip netns exec "$id-r$((ranks - 1))" ping -c1 -W1 10.77.0.1 >/dev/null 2>&1 && break
  command -v ping >/dev/null || { sleep 1; break; }
  sleep 0.1
done

# Connections to other hosts keep the system's congestion control (gcl sets reno only within a
# host): every namespace gets one that is not reno, where the kernel has one.
cc=$(ip netns exec "$id-r0" cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null |
  tr ' ' '\n' | grep -vx reno | grep -m1 . || true)
if [[ -n $cc ]]; then
  for ((i = 0; i < ranks; ++i)); do
    ip netns exec "$id-r$i" sysctl -qw net.ipv4.tcp_congestion_control="$cc" || cc=""
  done
fi

out=$(mktemp -d)
run_job() {  # run_job label master_addr args...: one rank per namespace, all must exit 0
  local label=$1 master=$2 pids=() i code=0
  shift 2
  for ((i = 0; i < ranks; ++i)); do
    # Half the ranks pick their address by interface name, half by the route to rank 0.
    local iface=""
    ((i % 2 == 1)) && iface=eth0
    ip netns exec "$id-r$i" env GCL_RANK=$i GCL_WORLD_SIZE=$ranks GCL_MASTER_ADDR="$master" \
      GCL_MASTER_PORT=29577 GCL_TOKEN="$id" GCL_TIMEOUT=30 GCL_INTERFACE="$iface" \
      "$worker" "$@" >"$out/$i" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { code=1; echo "rank $i failed:"; cat "$out/$i"; }
  done
  sed "s/^/[$label] /" "$out/0"
  return $code
}

check_all() {
  for ((i = 0; i < ranks; ++i)); do
    grep -q "all_reduce with every algorithm on $ranks ranks: OK" "$out/$i" || { echo "FAIL: rank $i ($1)"; exit 1; }
    [[ -z $cc ]] && continue
    local want="rank $i: congestion control:" peer
    for ((peer = 0; peer < ranks; ++peer)); do ((peer == i)) || want+=" $peer=$cc"; done
    grep -qxF "$want" "$out/$i" || {
      echo "FAIL: rank $i ($1): connections to other hosts should keep the system's $cc:"
      grep "congestion control" "$out/$i"
      exit 1
    }
  done
}
run_job "$ranks namespaces, IPv4" 10.77.0.1 algorithms || { echo FAIL; exit 1; }
check_all IPv4
if [[ -z "${no_v6:-}" ]]; then
  run_job "$ranks namespaces, IPv6" fd00:77::1 algorithms || { echo FAIL; exit 1; }
  check_all IPv6
else
  echo "(no IPv6 in these namespaces: IPv6 part skipped)"
fi
echo PASS
