#!/usr/bin/env bash
# The course homework's speedup experiment (doc/homework.md, Task 3, Step 2): distributed SGD
# (Algorithm 1) on LeNet-5 / MNIST with world sizes 1, 2, 4, 8, each to 97% test accuracy, with
# the same per-worker batch and step size. Prints N, k*(N), k*(1)/k*(N) and seconds, and plots test
# accuracy against iterations, one curve per N (gnuplot).
#
#   scripts/speedup.sh                       # one seed
#   SEEDS="1 2 3" scripts/speedup.sh         # median k* over seeds
#
# Environment (defaults): BUILD_DIR (build), WORLD_SIZES ("1 2 4 8"), SEEDS (1), BATCH (32),
# LR (0.05), EVAL_EVERY (25), ALGORITHM (ring), SYNC (params), TRANSPORT (inproc),
# OPTIMIZER (sgd), TARGET (0.97), MAX_ITERATIONS (4000: a run that has not reached the target
# by then counts as not reached, "-" in the table), OUT (out/speedup), PNG ($OUT/speedup.png),
# LR_SCALING (none; "linear" runs world size N with step size N * LR, the linear scaling rule,
# which is not the homework's setting but shows where its speedup goes), TABLE_ONLY (set to 1
# to rebuild the table and plot from the outputs already in $OUT, without training).
# Needs cmake, g++, npm (for the data) and gnuplot (Debian gnuplot-nox) for the plot.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/cli.sh"
gcl_cli_no_options "$@"
build="${BUILD_DIR:-$repo/build}"
sizes="${WORLD_SIZES:-1 2 4 8}"
seeds="${SEEDS:-1}"
batch="${BATCH:-32}"
lr="${LR:-0.05}"
every="${EVAL_EVERY:-25}"
algorithm="${ALGORITHM:-ring}"
sync="${SYNC:-params}"
transport="${TRANSPORT:-inproc}"
optimizer="${OPTIMIZER:-sgd}"
target="${TARGET:-0.97}"
out="${OUT:-$repo/out/speedup}"
png="${PNG:-$out/speedup.png}"
scaling="${LR_SCALING:-none}"
max_iterations="${MAX_ITERATIONS:-4000}"

trainer="$build/example/lenet5/train_lenet5"
table_only="${TABLE_ONLY:-0}"
if [[ "$table_only" != 1 && ! -x "$trainer" ]]; then
  echo "speedup: building train_lenet5 in $build (Release)"
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target train_lenet5
fi
[[ "$table_only" == 1 || -x "$trainer" ]] || { echo "speedup: $trainer was not built (are xtensor, xtensor-blas, OpenBLAS and CLI11 installed?)" >&2; exit 1; }
[[ "$table_only" == 1 ]] || "$repo/tools/fetch-mnist.sh"
mkdir -p "$out"

declare -A kstar secs tsecs ips comm
for seed in $seeds; do
  for n in $sizes; do
    log="$out/n$n-seed$seed.csv"
    lr_n="$lr"
    [[ "$scaling" == linear ]] && lr_n=$(awk -v a="$lr" -v n="$n" 'BEGIN { print a * n }')
    echo "speedup: world size $n, seed $seed, lr $lr_n"
    args=(--data "$repo/data/mnist" --world-size "$n" --transport "$transport"
          --algorithm "$algorithm" --sync "$sync" --optimizer "$optimizer" --lr "$lr_n"
          --batch "$batch" --seed "$seed" --target-accuracy "$target" --eval-every "$every"
          --max-iterations "$max_iterations" --log "$log" --quiet)
    # --json: the result as JSON on stdout, the human lines on stderr (kept in the .txt).
    [[ "$table_only" == 1 ]] ||
      "$trainer" "${args[@]}" --json 2> >(tee "$out/n$n-seed$seed.txt" >&2) >"$out/n$n-seed$seed.json" || true
    json="$out/n$n-seed$seed.json"
    [[ -s "$json" ]] || { echo "speedup: world size $n failed" >&2; exit 1; }
    get() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$json" "$1"; }
    kstar[$n,$seed]=$(get k_star) secs[$n,$seed]=$(get seconds) tsecs[$n,$seed]=$(get train_seconds)
    ips[$n,$seed]=$(get images_per_second) comm[$n,$seed]=$(get comm_share)
  done
done

# Median of the values that are not -1 (not reached); "-" if all are.
median() { tr ' ' '\n' | { grep -v -e '^$' -e '^-1$' || true; } | sort -g | awk '{a[NR]=$1} END {print NR == 0 ? -1 : (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
collect() { local v="" s; for s in $seeds; do eval "v+=\" \${$1[$2,\$s]}\""; done; echo "$v"; }

table="$out/speedup.txt"
{
  echo "# LeNet-5 / MNIST, distributed SGD (sync $sync, $algorithm all_reduce, $transport), batch $batch per worker, lr $lr (scaling: $scaling), target $target, evaluation every $every iterations, seeds: $seeds"
  printf '%4s %8s %8s %9s %9s %10s %6s   %s\n' N 'k*(N)' 'k*1/k*N' seconds 'training' 'images/s' comm 'k* per seed'
  k1=$(collect kstar 1 | median)
  for n in $sizes; do
    k=$(collect kstar "$n" | median)
    s=$(collect secs "$n" | median)
    t=$(collect tsecs "$n" | median)
    i=$(collect ips "$n" | median)
    c=$(collect comm "$n" | median)
    awk -v n="$n" -v k="$k" -v k1="$k1" -v s="$s" -v t="$t" -v i="$i" -v c="$c" -v all="$(collect kstar "$n")" -v m="$max_iterations" \
      'BEGIN { gsub(/-1/, "-", all)
               if (k > 0) printf "%4d %8g %8.2f %9.1f %9.1f %10.0f %5.0f%%  %s\n", n, k, k1 / k, s, t, i, 100 * c, all
               else printf "%4d %8s %8s %9s %9s %10.0f %5.0f%%  %s (not reached in %d iterations)\n", n, "-", "-", "-", "-", i, 100 * c, all, m }'
  done
} | tee "$table"

if command -v gnuplot >/dev/null; then
  first=${seeds%% *}
  plots=""
  for n in $sizes; do
    plots+="${plots:+, }'$out/n$n-seed$first.csv' using 2:9 with linespoints title 'N = $n'"
  done
  gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output '$png'
set datafile separator ','
set key bottom right
set grid
set xlabel 'iteration k'
set ylabel 'test accuracy (10000 images)'
set yrange [0.85:1]
set title 'Distributed SGD on LeNet-5 / MNIST: batch $batch per worker, lr $lr, lr scaling $scaling (seed $first)'
plot $plots, $target with lines dashtype 2 lc rgb 'gray' title '$target'
GP
  echo "speedup: plot in $png"
else
  echo "speedup: gnuplot not found (apt-get install gnuplot-nox): no plot" >&2
fi
