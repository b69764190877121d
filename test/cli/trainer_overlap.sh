#!/usr/bin/env bash
# train_lenet5 --sync grads --overlap (each gradient bucket's non-blocking all_reduce started
# from the backward pass) ends with the very parameters (one hash) of the blocking --sync grads,
# which all-reduces the same buckets one after the other: 3 ranks as threads over inproc, shm
# and tcp, and as processes under tools/gcl-launch over tcp and auto (hybrid); for 1, 3 and 5
# buckets. 3 ranks,
# not 2: a sum of two floats is the same in any order, so with 2 ranks other buckets would give
# the same bits and the comparison could not fail (checked below: other buckets, other hash).
# It also says what it hid (text and --json), and refuses what it cannot do. --pool (the arenas
# in the shm pool) gives the same bits as processes over shm and auto.
#
# Usage: trainer_overlap.sh SOURCE_DIR path/to/train_lenet5 [WITH_TCP=1]
set -euo pipefail
src=$1 trainer=$2 with_tcp=${3:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$src/test/cli/fake_mnist.py" "$tmp/mnist" 7
args=(--data "$tmp/mnist" --sync grads --batch 4 --max-iterations 4 --eval-every 2
      --eval-images 16 -q --timeout 60)

hash_of() {  # the hash line of a run's output
  sed -n 's/.*hash \([0-9a-f]\{16\}\).*/\1/p' "$1" | head -1
}
run() {  # NAME COMMAND...: the run succeeds; its hash into $got
  local name=$1; shift
  "$@" >"$tmp/$name" 2>&1 || fail "$name: exit $?: $(cat "$tmp/$name")"
  got=$(hash_of "$tmp/$name")
  [[ -n $got ]] || fail "$name printed no hash: $(cat "$tmp/$name")"
}
launch=("$src/tools/gcl-launch" -p 3 --timeout 120 --)

declare -A blocking_hash
for kib in 1 64 1024; do  # 5, 3 and 1 bucket(s)
  run "blocking_$kib" "$trainer" "${args[@]}" -p 3 -t inproc --bucket-kib "$kib"
  want=$got
  blocking_hash[$kib]=$want
  echo "blocking, --bucket-kib $kib, inproc: $want"
  checks=(inproc)
  ((with_tcp)) && checks+=(tcp)
  for t in "${checks[@]}"; do
    run "overlap_${kib}_$t" "$trainer" "${args[@]}" -p 3 -t "$t" --bucket-kib "$kib" --overlap
    [[ $got == "$want" ]] ||
      fail "--overlap --bucket-kib $kib over $t: hash $got, blocking's is $want: $(cat "$tmp/overlap_${kib}_$t")"
    echo "overlap,  --bucket-kib $kib, $t threads: $got"
  done
done
# The comparison can fail: other buckets round differently (3 ranks, ring).
[[ ${blocking_hash[1]} != "${blocking_hash[64]}" && ${blocking_hash[64]} != "${blocking_hash[1024]}" ]] ||
  fail "5, 3 and 1 bucket(s) gave the same hash: the comparison above proves nothing"

# The default buckets (64 KiB: 3) over shm threads, and tcp processes under the launcher.
want=${blocking_hash[64]}
run overlap_shm "$trainer" "${args[@]}" -p 3 -t shm --overlap
[[ $got == "$want" ]] || fail "--overlap over shm: hash $got, blocking's is $want"
echo "overlap, default buckets, shm threads: $got"
if ((with_tcp)); then
  run overlap_tcp_processes "${launch[@]}" "$trainer" "${args[@]}" -t tcp --overlap
  [[ $got == "$want" ]] ||
    fail "--overlap over tcp processes: hash $got, blocking's is $want: $(cat "$tmp/overlap_tcp_processes")"
  echo "overlap, default buckets, tcp processes: $got"
  run overlap_auto_processes "${launch[@]}" "$trainer" "${args[@]}" -t auto --overlap
  [[ $got == "$want" ]] ||
    fail "--overlap over auto (hybrid) processes: hash $got, blocking's is $want: $(cat "$tmp/overlap_auto_processes")"
  echo "overlap, default buckets, auto (hybrid) processes: $got"
fi

# --pool: the arenas in the shm pool, processes under the launcher over shm and auto: the bits
# of ordinary memory (one bucket: the arena's ring chunks, 80 KiB, are read in place); and a
# transport without a pool is refused.
want=${blocking_hash[1024]}
pool_over=(shm)
((with_tcp)) && pool_over+=(auto)
for t in "${pool_over[@]}"; do
  run "pool_$t" "${launch[@]}" "$trainer" "${args[@]}" -t "$t" --bucket-kib 1024 --pool
  [[ $got == "$want" ]] || fail "--pool over $t processes: hash $got, ordinary memory's is $want: $(cat "$tmp/pool_$t")"
  echo "blocking, --bucket-kib 1024, --pool, $t processes: $got"
done
if "$trainer" "${args[@]}" -p 3 -t inproc --pool >"$tmp/pool_inproc" 2>&1; then
  fail "--pool over inproc was accepted"
fi
grep -q -- "--pool: --transport inproc has no pool" "$tmp/pool_inproc" || fail "--pool over inproc: $(cat "$tmp/pool_inproc")"

# It says what it hid: in the header, the summary, RESULT and --json.
out=$tmp/overlap_64_inproc
grep -q "sync grads (3 buckets of at most 64 KiB, overlapped)" "$out" || fail "header: $(cat "$out")"
grep -Eq "^gradient all_reduce in 3 buckets of at most 64 KiB, overlapped with the backward pass: ran [0-9.]+ s, the steps waited [0-9.]+ s for it: [0-9.]+% hidden$" "$out" ||
  fail "no hidden-communication line: $(cat "$out")"
grep -Eq "^RESULT .* comm_run_seconds=[0-9.]+ comm_exposed_seconds=[0-9.]+ comm_hidden_share=[0-9.]+ " "$out" ||
  fail "RESULT without comm_hidden_share: $(cat "$out")"
grep -q "blocking: ran .* 0.0% hidden" "$tmp/blocking_64" || fail "blocking run: $(cat "$tmp/blocking_64")"
"$trainer" "${args[@]}" -p 3 --overlap --json >"$tmp/json" 2>"$tmp/json.err" ||
  fail "--overlap --json: $(cat "$tmp/json.err")"
python3 - "$tmp/json" <<'PY' || fail "--overlap --json: $(cat "$tmp/json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["overlap"] is True and d["bucket_kib"] == 64 and d["buckets"] == 3, d
assert d["comm_run_seconds"] > 0 and d["comm_exposed_seconds"] >= 0, d
assert 0 <= d["comm_hidden_share"] <= 1, d
assert abs(d["comm_hidden_seconds"] - max(0, d["comm_run_seconds"] - d["comm_exposed_seconds"])) < 1e-9, d
print(f"--json: {d['buckets']} buckets, {100 * d['comm_hidden_share']:.1f}% hidden")
PY

# Refused, with one line naming the flag: --overlap or --bucket-kib without --sync grads.
refused() {  # WORD ARGS...: exit 2, nothing on stdout, one line on stderr naming WORD
  local word=$1; shift
  local code=0
  "$trainer" --data "$tmp/mnist" -q "$@" >"$tmp/r.out" 2>"$tmp/r.err" || code=$?
  ((code == 2)) || fail "$* exited with $code: $(cat "$tmp/r.out" "$tmp/r.err")"
  [[ ! -s $tmp/r.out && $(wc -l <"$tmp/r.err") == 1 ]] && grep -qF -- "$word" "$tmp/r.err" ||
    fail "$*: not one line naming $word: $(cat "$tmp/r.out" "$tmp/r.err")"
  echo "refused: $* ($(cat "$tmp/r.err"))"
}
refused --overlap --overlap
refused --overlap --sync params --overlap
refused --bucket-kib --bucket-kib 128
echo "OK: --overlap gives the blocking run's parameters and reports what it hid"
