#!/usr/bin/env bash
# The course homework's speedup experiment (doc/homework.md, Task 3, Step 2): distributed SGD
# (Algorithm 1) on LeNet-5 / MNIST with world sizes 1, 2, 4, 8, each to 97% test accuracy, with
# the same per-worker batch and step size. Prints N, k*(N), k*(1)/k*(N) and seconds (a table in
# $OUT/speedup.txt, the same as CSV in $OUT/speedup.csv) and draws two plots:
#   $OUT/speedup_vs_n.png  k*(1)/k*(N) against N with the ideal line N, and beside this run the
#                          run with the other step-size rule if its CSV is there (COMPARE)
#   $OUT/speedup.png       test accuracy against iterations, one curve per N (first seed)
# A world size that does not reach the target says why, in the table, the CSV and both plots:
# not reached in MAX_ITERATIONS, diverged (test accuracy below 0.5, or a non-finite loss), or
# failed.
#
#   scripts/speedup.sh                       # one seed
#   SEEDS="1 2 3" scripts/speedup.sh         # median k* over seeds
#   LR_SCALING=linear scripts/speedup.sh     # step N * LR, in out/speedup-linear-lr; its plot
#                                            # then shows both runs, as does a rerun of the first
#
# Environment (defaults): BUILD_DIR (build), WORLD_SIZES ("1 2 4 8"), SEEDS (1), BATCH (32),
# LR (0.05), EVAL_EVERY (25), ALGORITHM (ring), SYNC (params), TRANSPORT (inproc),
# OPTIMIZER (sgd), TARGET (0.97), MAX_ITERATIONS (4000: a run that has not reached the target
# by then counts as not reached, "-" in the table), LR_SCALING (none; "linear" runs world size N
# with step size N * LR, the linear scaling rule, which is not the homework's setting but shows
# where its speedup goes), OUT (out/speedup, or out/speedup-linear-lr with LR_SCALING=linear),
# PNG ($OUT/speedup.png), SPEEDUP_PNG ($OUT/speedup_vs_n.png), COMPARE (the other rule's
# speedup.csv: out/speedup-linear-lr/speedup.csv or out/speedup/speedup.csv; drawn if it
# exists), TABLE_ONLY (set to 1 to rebuild the table, CSV and plots from the outputs already in
# $OUT, without training).
# Needs cmake, g++, npm (for the data), python3, and matplotlib for the plots (Debian:
# python3-matplotlib; without it the table and CSV are still written).
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
scaling="${LR_SCALING:-none}"
[[ $scaling == none || $scaling == linear ]] || gcl_cli_error "LR_SCALING: 'none' or 'linear', got '$scaling'"
if [[ $scaling == linear ]]; then
  out="${OUT:-$repo/out/speedup-linear-lr}"
  compare="${COMPARE:-$repo/out/speedup/speedup.csv}"
else
  out="${OUT:-$repo/out/speedup}"
  compare="${COMPARE:-$repo/out/speedup-linear-lr/speedup.csv}"
fi
png="${PNG:-$out/speedup.png}"
speedup_png="${SPEEDUP_PNG:-$out/speedup_vs_n.png}"
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

for seed in $seeds; do
  for n in $sizes; do
    log="$out/n$n-seed$seed.csv"
    lr_n="$lr"
    [[ "$scaling" == linear ]] && lr_n=$(awk -v a="$lr" -v n="$n" 'BEGIN { print a * n }')
    [[ "$table_only" == 1 ]] && continue
    echo "speedup: world size $n, seed $seed, lr $lr_n" >&2
    args=(--data "$repo/data/mnist" --world-size "$n" --transport "$transport"
          --algorithm "$algorithm" --sync "$sync" --optimizer "$optimizer" --lr "$lr_n"
          --batch "$batch" --seed "$seed" --target-accuracy "$target" --eval-every "$every"
          --max-iterations "$max_iterations" --log "$log" --quiet)
    # --json: the result as JSON on stdout, the human lines (one per evaluation: the progress)
    # on stderr, kept in the .txt. A run that fails (a non-finite loss: diverged) leaves no
    # JSON; the table says so and the other world sizes still run.
    rm -f "$out/n$n-seed$seed.json"
    # (Its exit code is 1 also when the target was not reached: the JSON tells them apart.)
    "$trainer" "${args[@]}" --json 2> >(tee "$out/n$n-seed$seed.txt" >&2) >"$out/n$n-seed$seed.json" || true
    [[ -s "$out/n$n-seed$seed.json" ]] ||
      echo "speedup: world size $n, seed $seed: the trainer failed (see $out/n$n-seed$seed.txt)" >&2
  done
done

# The table (stdout and speedup.txt) and speedup.csv; then the plots, with a Python that has
# matplotlib (python3 first; Debian's /usr/bin/python3 if python3 is another installation).
report="$repo/scripts/speedup_report.py"
python3 "$report" table "$out" --sizes "$sizes" --seeds "$seeds" --batch "$batch" --lr "$lr" \
  --lr-scaling "$scaling" --target "$target" --eval-every "$every" --max-iterations "$max_iterations" \
  --sync "$sync" --algorithm "$algorithm" --transport "$transport"
plot_python=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import matplotlib' 2>/dev/null; then plot_python=$p; break; fi
done
if [[ -n $plot_python ]]; then
  csvs=("$out/speedup.csv")
  [[ -f $compare && $(realpath "$compare") != $(realpath "$out/speedup.csv") ]] && csvs+=("$compare")
  # The homework's rule (the same step for every N) first, whichever run this is.
  [[ $scaling == linear && ${#csvs[@]} == 2 ]] && csvs=("${csvs[1]}" "${csvs[0]}")
  "$plot_python" "$report" speedup "${csvs[@]}" --png "$speedup_png" --target "$target"
  "$plot_python" "$report" curves "$out" --sizes "$sizes" --seeds "$seeds" --batch "$batch" \
    --lr "$lr" --lr-scaling "$scaling" --target "$target" --max-iterations "$max_iterations" --png "$png"
else
  echo "speedup: matplotlib not found (apt-get install python3-matplotlib): no plots" >&2
fi
