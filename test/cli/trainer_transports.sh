#!/usr/bin/env bash
# train_lenet5 reaches the very same parameters (one hash) whichever transport carries its
# all_reduce and however its ranks run: 2 threads through memory (inproc), then 2 processes
# under tools/gcl-launch with --transport auto (the default there), shm and tcp, and 2 threads
# over shm. Data: a few random MNIST-format images (no download).
#
# Usage: trainer_transports.sh SOURCE_DIR path/to/train_lenet5 [WITH_TCP=1]
set -euo pipefail
src=$1 trainer=$2 with_tcp=${3:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$src/test/cli/fake_mnist.py" "$tmp/mnist" 7
args=(--data "$tmp/mnist" --batch 4 --max-iterations 4 --eval-every 2 --eval-images 16 -q --timeout 60)

hash_of() {  # the hash line of a run's output
  sed -n 's/.*hash \([0-9a-f]\{16\}\).*/\1/p' "$1" | head -1
}
"$trainer" "${args[@]}" -p 2 -t inproc >"$tmp/inproc" 2>&1 || fail "inproc: $(cat "$tmp/inproc")"
want=$(hash_of "$tmp/inproc")
[[ -n $want ]] || fail "inproc printed no hash: $(cat "$tmp/inproc")"
echo "inproc, 2 threads: $want"

check() {  # NAME COMMAND...: the run succeeds, says how its ranks run, and prints $want
  local name=$1; shift
  "$@" >"$tmp/$name" 2>&1 || fail "$name: exit $?: $(cat "$tmp/$name")"
  local got; got=$(hash_of "$tmp/$name")
  [[ $got == "$want" ]] || fail "$name: hash '$got', inproc's is $want: $(cat "$tmp/$name")"
  echo "$name: $got ($(grep -o '([^)]*), all_reduce' "$tmp/$name" | head -1))"
}
launch=("$src/tools/gcl-launch" -p 2 --timeout 120 --)
check shm_processes "${launch[@]}" "$trainer" "${args[@]}" -t shm
check shm_threads "$trainer" "${args[@]}" -p 2 -t shm
if ((with_tcp)); then
  check default_processes "${launch[@]}" "$trainer" "${args[@]}"
  grep -q "shared memory within a host, tcp between" "$tmp/default_processes" ||
    fail "under gcl-launch the default is not auto: $(cat "$tmp/default_processes")"
  check tcp_processes "${launch[@]}" "$trainer" "${args[@]}" -t tcp
fi
echo "OK: the same parameters over every transport"
