#!/usr/bin/env bash
# tools/gcl-launch binds each rank to one CPU of its own when ranks do not outnumber the CPUs it
# may use (as mpirun does), leaves them unbound when they do or with --bind none, and binds
# round robin with --bind core. Checked on the ranks' actual CPU masks (/proc/self/status).
# Usage: launch_bind.sh path/to/gcl-launch
set -u
launch=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$dir/out" 2>/dev/null; exit 1; }

cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
read -r -a cpu <<<"$cpus"
n=${#cpu[@]}
if ((n < 2)); then
  echo "GCL_SKIP: one CPU only: nothing to bind apart"
  exit 77
fi
mine=$(grep Cpus_allowed_list /proc/self/status | cut -f2)

masks() {  # runs ranks that print their CPU mask; prints "rank mask" lines in rank order
  "$launch" --tag-output "$@" -- /bin/sh -c 'echo "mask=$(grep Cpus_allowed_list /proc/self/status | cut -f2) bound=$GCL_BOUND_CPU"' \
    >"$dir/out" 2>&1 || fail "gcl-launch $* failed"
  sed -n 's/^\[\([0-9]*\)\] mask=\(.*\)$/\1 \2/p' "$dir/out" | sort -n
}

# Default, as many ranks as CPUs: rank i on the i-th CPU, each alone.
out=$(masks -p "$n")
for ((i = 0; i < n; ++i)); do
  grep -qx "$i ${cpu[i]} bound=${cpu[i]}" <<<"$out" || fail "default, $n ranks: rank $i is not bound to CPU ${cpu[i]} alone: $out"
done
# More ranks than CPUs: nobody bound (the launcher's own mask).
out=$(masks -p $((n + 1)))
(($(grep -c " $mine bound=$" <<<"$out") == n + 1)) || fail "$((n + 1)) ranks on $n CPUs should be unbound ($mine): $out"
# --bind none: unbound.
out=$(masks -p 2 --bind none)
(($(grep -c " $mine bound=$" <<<"$out") == 2)) || fail "--bind none should leave the ranks unbound: $out"
# --bind core with more ranks than CPUs: round robin.
out=$(masks -p $((n + 1)) --bind core)
grep -qx "$n ${cpu[0]} bound=${cpu[0]}" <<<"$out" || fail "--bind core: rank $n should share CPU ${cpu[0]}: $out"
# A launcher restricted to one CPU binds there (its restriction is respected).
if command -v taskset >/dev/null; then
  out=$(taskset -c "${cpu[1]}" "$launch" --tag-output -p 1 -- /bin/sh -c 'grep Cpus_allowed_list /proc/self/status | cut -f2' 2>&1)
  [[ "$out" == "[0] ${cpu[1]}" ]] || fail "under taskset -c ${cpu[1]}, rank 0 ran on '$out'"
fi
echo PASS
