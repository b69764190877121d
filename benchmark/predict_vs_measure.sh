#!/usr/bin/env bash
# Regenerates doc/img/predict_vs_measure.{dat,png}: the cost model's prediction against the
# measured time of one message (ping-pong) and of the tree, ring and halving-doubling
# all_reduce on 4 threads, across sizes. Needs gnuplot (Debian: gnuplot-nox).
#
#     benchmark/predict_vs_measure.sh build-release [doc/img]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../scripts/cli.sh"
gcl_cli_help_version "$@"
(($# >= 1 && $# <= 2)) || gcl_cli_error "usage: predict_vs_measure.sh BUILD_DIR [OUT_DIR]"
[[ $1 != -* ]] || gcl_cli_error "unknown option '$1'"
build=$1
[[ -x $build/benchmark/predict_vs_measure ]] || gcl_cli_error "BUILD_DIR: no benchmark/predict_vs_measure under '$build'"
out=${2:-$here/../doc/img}
mkdir -p "$out"
"$build/benchmark/predict_vs_measure" --world-size 4 --min-bytes 64 --max-bytes 16777216 \
  --repetitions 15 > "$out/predict_vs_measure.dat"
model=$(head -n 1 "$out/predict_vs_measure.dat" | sed -e "s/^.*model //" -e "s/; median/, median/")
gnuplot <<GP
set terminal pngcairo size 1000,640 noenhanced font ",10"
set output "$out/predict_vs_measure.png"
set title "all_reduce on 4 threads: cost model (lines) vs measured median (points)\n$model" font ",9"
set logscale xy
set xlabel "bytes per rank (D)"
set ylabel "microseconds"
set key top left
set grid
f = "$out/predict_vs_measure.dat"
plot f using 1:2 with lines lw 2 lc rgb "#444444" title "one message t + D/b (model)", \
     f using 1:3 with points pt 7 lc rgb "#444444" title "one message (ping-pong / 2)", \
     f using 1:4 with lines lw 2 lc rgb "#1f77b4" title "tree (model)", \
     f using 1:5 with points pt 5 lc rgb "#1f77b4" title "tree", \
     f using 1:6 with lines lw 2 lc rgb "#d62728" title "ring (model)", \
     f using 1:7 with points pt 9 lc rgb "#d62728" title "ring", \
     f using 1:10 with lines lw 2 dt 2 lc rgb "#2ca02c" title "halving_doubling (model)", \
     f using 1:11 with points pt 11 lc rgb "#2ca02c" title "halving_doubling"
GP
echo "wrote $out/predict_vs_measure.dat and $out/predict_vs_measure.png"
