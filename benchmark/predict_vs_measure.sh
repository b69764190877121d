#!/usr/bin/env bash
# Regenerates doc/img/predict_vs_measure.{dat,png}: the cost model's prediction against the
# measured time of one message (ping-pong) and of the tree, ring and halving-doubling
# all_reduce on 4 threads, across sizes. Needs gnuplot (Debian: gnuplot-nox). The measurement
# prints its progress on stderr (a line per calibration, size and run).
#
#     benchmark/predict_vs_measure.sh build-release [doc/img]
#     benchmark/predict_vs_measure.sh --replot [doc/img]   # redraw the .png from the .dat there
set -eu
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../scripts/cli.sh"
gcl_cli_help_version "$@"
replot=0
if [[ ${1:-} == --replot ]]; then
  replot=1
  shift
  (($# <= 1)) || gcl_cli_error "usage: predict_vs_measure.sh --replot [OUT_DIR]"
else
  (($# >= 1 && $# <= 2)) || gcl_cli_error "usage: predict_vs_measure.sh BUILD_DIR [OUT_DIR]"
fi
[[ ${1:-} != -* ]] || gcl_cli_error "unknown option '$1'"
if ((replot)); then
  out=${1:-$here/../doc/img}
  [[ -f $out/predict_vs_measure.dat ]] || gcl_cli_error "OUT_DIR: no predict_vs_measure.dat in '$out'"
else
  build=$1
  [[ -x $build/benchmark/predict_vs_measure ]] || gcl_cli_error "BUILD_DIR: no benchmark/predict_vs_measure under '$build'"
  out=${2:-$here/../doc/img}
  mkdir -p "$out"
  "$build/benchmark/predict_vs_measure" --world-size 4 --min-bytes 64 --max-bytes 16777216 \
    --repetitions 15 > "$out/predict_vs_measure.dat"
fi
# Size ticks at every size measured (powers of 4), in B, KiB, MiB; time ticks per decade in
# us and ms: no 1e+06 on either axis.
xtics=$(awk '!/^#/ && NF { b = $1
    if (b >= 1048576 && b % 1048576 == 0) l = b / 1048576 " MiB"
    else if (b >= 1024 && b % 1024 == 0) l = b / 1024 " KiB"
    else l = b " B"
    printf "%s\"%s\" %s", (n++ ? ", " : ""), l, b }' "$out/predict_vs_measure.dat")
model=$(head -n 1 "$out/predict_vs_measure.dat" | sed -e "s/^.*model //" -e "s/; median/, median/")
gnuplot <<GP
set terminal pngcairo size 1000,640 noenhanced font ",10"
set output "$out/predict_vs_measure.png"
set title "all_reduce on 4 threads: cost model (lines) vs measured median (points)\n$model" font ",9"
set logscale xy
set xlabel "size per rank (D)"
set ylabel "time per call"
set xtics ($xtics)
set autoscale xfix
set offsets graph 0.03, graph 0.03, 0, 0
set ytics ("1 us" 1, "10 us" 10, "100 us" 100, "1 ms" 1000, "10 ms" 10000, "100 ms" 100000, "1 s" 1000000)
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
((replot)) && echo "wrote $out/predict_vs_measure.png" || echo "wrote $out/predict_vs_measure.dat and $out/predict_vs_measure.png"
