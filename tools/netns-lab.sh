# A small network of our own on one machine, for tests and benchmarks that must cross a real
# network stack: one rank per network namespace, each joined by a veth pair to a bridge that
# lives in a namespace of its own. The addresses exist only inside these namespaces: nothing is
# added to the host's namespace and nothing is routed anywhere else. Needs root and iproute2.
#
# Sourced, not run (test/transport/tcp_netns.sh, benchmark/tcp/shaped.sh):
#
#   source tools/netns-lab.sh
#   netns_lab_up ID RANKS V4_PREFIX [V6_PREFIX]
#       namespaces ID-br (the bridge) and ID-r0 .. ID-r(RANKS-1); rank i's eth0 gets
#       V4_PREFIX$((i + 1))/24 (V4_PREFIX like "10.77.0.") and, if given and the kernel allows
#       it, V6_PREFIX$((i + 1))/64 (like "fd00:77::"). Sets NETNS_LAB_V6=1 if IPv6 is there.
#       Returns 0, 2 if no namespace can be created here (the caller skips), 1 on other errors.
#   netns_lab_shape ID RANKS RATE
#       caps every rank's link at RATE (tc's tbf, like 100mbit or 2gbit) in both directions:
#       on its eth0 and on its port of the bridge. Returns 1 where tbf is not available.
#   netns_lab_down ID RANKS
#       removes them all (safe to call whatever was created; call it from an EXIT trap).

netns_lab_up() {
  local id=$1 ranks=$2 v4=$3 v6=${4:-} i ns
  NETNS_LAB_V6=0
  ip netns add "$id-br" 2>/dev/null || return 2
  ip -n "$id-br" link add br0 type bridge || return 1
  ip -n "$id-br" link set br0 up || return 1
  [[ -n $v6 ]] && NETNS_LAB_V6=1
  for ((i = 0; i < ranks; ++i)); do
    ns="$id-r$i"
    ip netns add "$ns" || return 1
    ip -n "$id-br" link add "p$i" type veth peer name eth0 netns "$ns" || return 1
    ip -n "$id-br" link set "p$i" master br0 up || return 1
    ip -n "$ns" link set lo up || return 1
    ip -n "$ns" addr add "$v4$((i + 1))/24" dev eth0 || return 1
    if [[ -n $v6 ]]; then
      ip -n "$ns" addr add "$v6$((i + 1))/64" dev eth0 nodad 2>/dev/null || NETNS_LAB_V6=0
    fi
    ip -n "$ns" link set eth0 up || return 1
  done
}

netns_lab_shape() {
  local id=$1 ranks=$2 rate=$3 burst i
  # The bucket must hold at least what the rate brings in one timer tick, else tbf cannot reach
  # the rate: 512 KiB per Gbit/s (a tick of 4 ms at 250 Hz).
  if [[ $rate =~ ^([0-9]+)gbit$ ]]; then
    burst=$((BASH_REMATCH[1] * 512))kb
  elif [[ $rate == *gbit ]]; then
    burst=512kb
  else
    burst=64kb
  fi
  for ((i = 0; i < ranks; ++i)); do
    ip netns exec "$id-r$i" tc qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms || return 1
    ip netns exec "$id-br" tc qdisc replace dev "p$i" root tbf rate "$rate" burst "$burst" latency 100ms || return 1
  done
}

netns_lab_down() {
  local id=$1 ranks=$2 i
  for ((i = 0; i < ranks; ++i)); do ip netns del "$id-r$i" 2>/dev/null; done
  ip netns del "$id-br" 2>/dev/null
  return 0
}
