#!/usr/bin/env bash
# Tree vs ring all_reduce over a shaped network, beside the cost model's prediction.
#
#   benchmark/tcp/shaped.sh path/to/tcp_link_bench [ranks=4] [rates="100mbit 1gbit"] [reps=10]
#
# One rank per network namespace, veth pairs to a bridge in its own namespace, private
# addresses 10.78.0.0/24 that exist only inside these namespaces. Every link is capped with the
# tbf qdisc in both directions (on the rank's eth0 and on its bridge port), so each rank's
# sends and receives each get `rate`. For every rate, tcp_link_bench (benchmark/tcp/link_bench.cpp)
# first calibrates the alpha-beta-gamma model by ping-pong between ranks 0 and 1 on this very
# link (gcl::calibrate), then times tree and ring all_reduce per size (median, slowest rank) and
# prints them beside the model's predictions, with which one is faster measured and predicted.
#
# Latency: this kernel has no netem, and tbf only limits rate (its `latency` bounds the queue,
# it does not add delay). alpha here is the real cost of the network stack (tens of
# microseconds). To add propagation delay without netem: the fq qdisc honours each packet's
# departure time (EDT), so a tc BPF program that sets skb->tstamp = now + delay on egress, with
# fq as the root qdisc, delays every packet (what Cilium's bandwidth manager builds on); or use
# a kernel with sch_netem (`tc qdisc add dev eth0 root netem delay 1ms rate 100mbit`).
#
# Root only (exit 77 otherwise). Needs iproute2 (ip, tc). Namespaces are removed on exit.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/cli.sh"
gcl_cli_help_version "$@"
(($# >= 1 && $# <= 4)) || gcl_cli_error "usage: shaped.sh path/to/tcp_link_bench [ranks] [rates] [reps]"
[[ $1 != -* ]] || gcl_cli_error "unknown option '$1'"
[[ -x $1 ]] || gcl_cli_error "'$1' is not an executable tcp_link_bench"
[[ -z ${2:-} ]] || gcl_cli_positive ranks "$2"
[[ -z ${4:-} ]] || gcl_cli_positive reps "$4"
bench=$1
ranks=${2:-4}
rates=${3:-100mbit 1gbit}
reps=${4:-10}
id=gclb$$

[[ $(id -u) == 0 ]] || { echo "SKIP: not root"; exit 77; }
command -v tc >/dev/null && command -v ip >/dev/null || { echo "SKIP: needs iproute2 (ip, tc)"; exit 77; }

source "$(dirname "${BASH_SOURCE[0]}")/../../tools/netns-lab.sh"
cleanup() {
  netns_lab_down "$id" "$ranks"
  rm -rf "${out:-}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_lab_up "$id" "$ranks" 10.78.0.
case $? in
  0) ;;
  2) echo "SKIP: cannot create network namespaces"; exit 77 ;;
  *) echo "FAIL: could not set up the namespaces"; exit 1 ;;
esac
sleep 1
out=$(mktemp -d)

for rate in $rates; do
  if ! netns_lab_shape "$id" "$ranks" "$rate"; then
    echo "tc tbf is not available in this kernel: cannot shape to $rate"
    continue
  fi
  case "$rate" in
    *gbit) max=$((16 << 20)) ;;
    *) max=$((2 << 20)) ;;
  esac
  echo "## $ranks ranks, every link capped at $rate (tbf), all_reduce float32, median of $reps"
  pids=()
  for ((i = 0; i < ranks; ++i)); do
    ip netns exec "$id-r$i" env GCL_RANK=$i GCL_WORLD_SIZE=$ranks GCL_MASTER_ADDR=10.78.0.1 \
      GCL_MASTER_PORT=29578 GCL_TOKEN="$id" GCL_TIMEOUT=120 \
      "$bench" tree_vs_ring "$reps" "$max" >"$out/$i" 2>&1 &
    pids+=($!)
  done
  ok=1
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || { ok=0; echo "rank $i failed:"; cat "$out/$i"; }; done
  ((ok)) && cat "$out/0"
  echo
done
