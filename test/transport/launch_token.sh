#!/usr/bin/env bash
# tools/gcl-launch gives every launch a job token of its own: 128 random bits (32 hex digits),
# the same for every rank of the launch, different for the next launch; --token replaces it.
# Usage: launch_token.sh path/to/gcl-launch
set -u
launch=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$dir/out" 2>/dev/null; exit 1; }

tokens_of() {  # runs 3 ranks that print their token; prints the distinct tokens seen
  "$launch" --tag-output -p 3 "$@" -- /bin/sh -c 'echo "token=$GCL_TOKEN"' >"$dir/out" 2>&1 || fail "gcl-launch failed"
  (($(grep -c "^\[[0-2]\] token=" "$dir/out") == 3)) || fail "not every rank printed its token"
  sed -n 's/^\[[0-2]\] token=//p' "$dir/out" | sort -u
}

a=$(tokens_of)
[[ "$a" =~ ^[0-9a-f]{32}$ ]] || fail "the ranks' tokens are not one 128-bit hex token: '$a'"
b=$(tokens_of)
[[ "$b" =~ ^[0-9a-f]{32}$ ]] || fail "second launch: not one 128-bit hex token: '$b'"
[[ "$a" != "$b" ]] || fail "two launches got the same token $a"
c=$(tokens_of --token my-job)
[[ "$c" == my-job ]] || fail "--token my-job gave '$c'"
echo "tokens: $a, $b; --token: $c"
echo PASS
