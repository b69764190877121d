#!/usr/bin/env bash
# A job on two "hosts": gcl's default process transport (shared memory inside a host, TCP
# between hosts) against TCP to every peer, in the same run.
#
#   benchmark/two_hosts.sh path/to/all_reduce [ranks_per_host=2] [rounds=5] [max_bytes=64M] [link_rate]
#   (ranks_per_host: n for two hosts of n, or a+b for hosts of a and b ranks, such as 3+1)
#
# Two network namespaces stand for two hosts (tools/netns-lab.sh: a veth pair each to a bridge
# in a namespace of its own, addresses 10.79.0.0/24 that exist only inside them). Ranks 0 ..
# n-1 run in the first, n .. 2n-1 in the second (n = ranks_per_host, blocks as mpirun and srun
# place them; with a+b, ranks 0 .. a-1 in the first and a .. a+b-1 in the second). Ranks of
# one namespace share its abstract Unix sockets and so meet in a shm segment; across
# namespaces only TCP reaches (doc/shm.md, "The right path per peer").
# link_rate (like 1gbit or 10gbit) caps each namespace's link to the bridge in both directions
# (tc's tbf), as the network between real hosts is slower than this machine's memory; without
# it the namespaces talk at memory speed through the veth pairs.
#
# Each round runs benchmark/all_reduce twice, alternated: GCL_TRANSPORT=auto (hybrid_transport)
# and GCL_TRANSPORT=tcp, float32 sum, calls back to back, 4 B to max_bytes by 4, the slowest
# rank's median per size; the program checks every result. Prints, per size, the median over
# the rounds of each, the range, and tcp / auto (above 1: the hybrid is faster).
#
# Root only (exit 77 otherwise). Needs iproute2 and python3. Namespaces are removed on exit.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/cli.sh"
gcl_cli_help_version "$@"
(($# >= 1 && $# <= 5)) || gcl_cli_error "usage: two_hosts.sh path/to/all_reduce [ranks_per_host] [rounds] [max_bytes] [link_rate]"
[[ $1 != -* ]] || gcl_cli_error "unknown option '$1'"
[[ -x $1 ]] || gcl_cli_error "'$1' is not an executable all_reduce benchmark"
# ranks_per_host: n, or a+b (hosts of different sizes).
first=2 second=2
if [[ ${2:-} =~ ^[1-9][0-9]*$ ]]; then
  first=$2 second=$2
elif [[ ${2:-} =~ ^([1-9][0-9]*)\+([1-9][0-9]*)$ ]]; then
  first=${BASH_REMATCH[1]} second=${BASH_REMATCH[2]}
elif [[ -n ${2:-} ]]; then
  gcl_cli_error "ranks_per_host: '$2' is neither a positive n nor a+b (hosts of a and b ranks)"
fi
[[ -z ${3:-} ]] || gcl_cli_positive rounds "$3"
[[ -z ${4:-} || $4 =~ ^[0-9]+[KMG]?$ ]] || gcl_cli_error "max_bytes: '$4' is not a size like 4096, 64K or 64M"
[[ -z ${5:-} || $5 =~ ^[0-9]+(\.[0-9]+)?[kmg]bit$ ]] || gcl_cli_error "link_rate: '$5' is not a rate like 100mbit, 1gbit or 2.5gbit"
bench=$1
rounds=${3:-5}
max=${4:-64M}
rate=${5:-}
ranks=$((first + second))
id=gclm$$

[[ $(id -u) == 0 ]] || { echo "SKIP: not root (network namespaces need CAP_SYS_ADMIN)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: needs iproute2 (ip)"; exit 77; }

source "$gcl_cli_root/tools/netns-lab.sh"
cleanup() {
  netns_lab_down "$id" 2
  rm -rf "${out:-}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_lab_up "$id" 2 10.79.0.
case $? in
  0) ;;
  2) echo "SKIP: cannot create network namespaces"; exit 77 ;;
  *) echo "FAIL: could not set up the namespaces"; exit 1 ;;
esac
if [[ -n $rate ]]; then
  command -v tc >/dev/null || { echo "SKIP: needs iproute2's tc to cap the link at $rate"; exit 77; }
  netns_lab_shape "$id" 2 "$rate" || { echo "FAIL: tc tbf could not cap the link at $rate"; exit 1; }
fi
out=$(mktemp -d)

# run_job MODE ROUND: one job of every rank; rank 0's CSV rows, tagged, to $out/rows.
run_job() {
  local mode=$1 round=$2 pids=() i failed=0
  for ((i = 0; i < ranks; ++i)); do
    # GCL_TIMEOUT bounds every wait inside gcl; timeout(1) bounds the whole job on top.
    ip netns exec "$id-r$((i < first ? 0 : 1))" env GCL_RANK=$i GCL_WORLD_SIZE=$ranks \
      GCL_MASTER_ADDR=10.79.0.1 GCL_MASTER_PORT=29579 GCL_TOKEN="$id-$mode-$round" \
      GCL_TIMEOUT=60 GCL_TRANSPORT="$mode" \
      timeout 900 "$bench" --transport auto -b 4 -e "$max" -f 4 --max-seconds 0.5 --csv \
      >"$out/$i.csv" 2>"$out/$i.err" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed=1; done
  if ((failed)); then
    echo "FAIL: GCL_TRANSPORT=$mode, round $round:"
    for ((i = 0; i < ranks; ++i)); do echo "rank $i:"; cat "$out/$i.err"; done
    exit 1
  fi
  awk -F, -v m="$mode" 'NR > 1 && $6 ~ /^[0-9]+$/ { print m, $6, $11, $14 }' "$out/0.csv" >>"$out/rows"
}

echo "# all_reduce, float32 sum, $ranks ranks on two pretend hosts (network namespaces) of" \
  "$first and $second, $rounds rounds${rate:+, their links capped at $rate}; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= rounds; ++r)); do
  run_job auto "$r"
  run_job tcp "$r"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$out/rows" <<'EOF'
import collections, statistics, sys
times, wrong = collections.defaultdict(list), 0
for line in open(sys.argv[1]):
    mode, size, us, bad = line.split()
    times[(int(size), mode)].append(float(us))
    wrong += int(bad)
print(f"{'bytes':>10} {'auto us':>10} {'(range)':>19} {'tcp us':>10} {'(range)':>19} {'tcp/auto':>9}")
ratios = []
for size in sorted({s for s, _ in times}):
    a, t = times[(size, "auto")], times[(size, "tcp")]
    ma, mt = statistics.median(a), statistics.median(t)
    ratios.append(mt / ma)
    print(f"{size:>10} {ma:>10.2f} {min(a):>9.1f}-{max(a):<9.1f} {mt:>10.2f} {min(t):>9.1f}-{max(t):<9.1f} {mt / ma:>9.2f}")
print(f"# tcp/auto {min(ratios):.2f}-{max(ratios):.2f}; wrong results: {wrong}")
sys.exit(1 if wrong else 0)
EOF
