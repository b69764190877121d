#!/usr/bin/env bash
# Training throughput of train_lenet5 (one rank, one thread) against PyTorch's LeNet-5 (one
# thread), same batch, measured alternately in the same run; prints each run and the medians.
#
#   example/lenet5/peer/compare_throughput.sh [BUILD_DIR] [RUNS] [BATCH] [ITERATIONS]
#
# Needs a built train_lenet5, MNIST in data/mnist (tools/fetch-mnist.sh) and a python3 with
# torch (Debian: apt-get install python3-torch).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
source "$repo/scripts/cli.sh"
gcl_cli_help_version "$@"
(($# <= 4)) || gcl_cli_error "at most 4 arguments: [BUILD_DIR] [RUNS] [BATCH] [ITERATIONS]"
[[ ${1:-} != -* ]] || gcl_cli_error "unknown option '$1'"
[[ -z ${2:-} ]] || gcl_cli_positive RUNS "$2"
[[ -z ${3:-} ]] || gcl_cli_positive BATCH "$3"
[[ -z ${4:-} ]] || gcl_cli_positive ITERATIONS "$4"
build="${1:-$repo/build}"
runs="${2:-5}"
batch="${3:-32}"
iters="${4:-400}"
trainer="$(find "$build" -name train_lenet5 -type f -perm -u+x | head -1)"
[[ -n "$trainer" ]] || { echo "compare_throughput: no train_lenet5 under $build" >&2; exit 1; }
py=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import torch' 2>/dev/null; then py="$p"; break; fi
done
[[ -n "$py" ]] || { echo "compare_throughput: no python3 with torch (apt-get install python3-torch)" >&2; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ours=() theirs=()
for ((i = 1; i <= runs; ++i)); do
  o=$(OPENBLAS_NUM_THREADS=1 "$trainer" --data "$repo/data/mnist" --world-size 1 --threads 1 \
        --batch "$batch" --max-iterations "$iters" --eval-every 1000000 --eval-images 100 -q \
        --json 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["images_per_second"])')
  t=$("$py" "$repo/example/lenet5/peer/lenet5_torch.py" --batch "$batch" --iterations "$iters" |
      sed -n 's/^RESULT images_per_second=\([0-9.]*\)/\1/p')
  printf 'run %d: gcl train_lenet5 %8.0f images/s   pytorch %8.0f images/s\n' "$i" "$o" "$t"
  ours+=("$o") theirs+=("$t")
done
mo=$(printf '%s\n' "${ours[@]}" | median)
mt=$(printf '%s\n' "${theirs[@]}" | median)
awk -v n="$runs" -v o="$mo" -v t="$mt" 'BEGIN {
  printf "median of %d: gcl train_lenet5 %.0f images/s, pytorch %.0f images/s, ratio %.2f\n", n, o, t, o / t }'
