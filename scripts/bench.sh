#!/usr/bin/env bash
# gcl side by side with Open MPI, in one run: installs what it needs (apt-get, only what is
# missing), builds the benchmarks in Release, measures the machine's limits, then for P = 2 and
# 4 and every repetition runs, one after the other so that they share the machine's state:
#   gcl inproc (threads)               vs  Open MPI shared memory (--mca btl self,vader)
#   gcl tcp (tools/gcl-launch, 1 proc/rank) vs Open MPI TCP (--mca btl self,tcp, lo)
# and writes doc/benchmarks.md (tables with the ratio gcl / Open MPI per size) and
# doc/img/bench_*.png (busbw and latency against size).
#
#   scripts/bench.sh                 # all five collectives, 4 B .. 64 MiB, 3 repetitions
#   scripts/bench.sh --quick         # all_reduce only, fewer sizes and iterations, 1 repetition
#   scripts/bench.sh --collectives "all_reduce broadcast" --reps 5 --algorithms "ring automatic"
#   scripts/bench.sh --keep --collectives "all_gather" --factor 4   # add to the last results
#
# Environment: GCL_BUILD_DIR (default build-bench/), GCL_JOBS (default nproc).
set -euo pipefail
args="$*"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GCL_BUILD_DIR:-$repo/build-bench}"
jobs="${GCL_JOBS:-$(nproc)}"

collectives="all_reduce broadcast reduce_scatter all_gather all_to_all"
algorithms=""          # for all_reduce; empty: automatic (if built) and ring
reps=3
ranks="2 4"
min=4 max=64M factor=2
iters_small=50 iters_large=10 warmup=3
transports="inproc tcp"
install=1
keep=0
out_md="$repo/doc/benchmarks.md"
img="$repo/doc/img"
while (($#)); do
  case "$1" in
    --quick) collectives="all_reduce"; reps=1; factor=8; iters_small=20; iters_large=5; shift ;;
    --collectives) collectives="$2"; shift 2 ;;
    --algorithms) algorithms="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --max-bytes) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --transports) transports="$2"; shift 2 ;;
    --no-install) install=0; shift ;;
    --keep) keep=1; shift ;;  # add to the previous run's results (e.g. other collectives)
    --iters) iters_small="$2"; iters_large="$3"; shift 3 ;;
    --output) out_md="$2"; img="$(dirname "$2")/img"; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

step() { printf '\n== %s\n' "$*" >&2; }

if ((install)); then
  source "$repo/scripts/packages.sh"
  gcl_install_packages openmpi-bin libopenmpi-dev gnuplot-nox python3
fi

step "configure and build (Release) in $build"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGCL_BUILD_TESTS=OFF \
  -DGCL_BUILD_EXAMPLES=OFF -DGCL_BUILD_BENCHMARKS=ON >/dev/null
targets=(machine_limits)
for c in $collectives; do targets+=("bench_$c" "mpi_$c"); done
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
bin="$build/benchmark"
[[ -x "$bin/mpi/all_reduce" ]] || { echo "bench.sh: Open MPI programs were not built (is libopenmpi-dev installed?)" >&2; exit 1; }
have_tcp=0
if "$bin/${collectives%% *}" --help 2>&1 | grep -q tcp && grep -q GCL_BENCH_TCP "$build/benchmark/CMakeFiles/bench_${collectives%% *}.dir/flags.make" 2>/dev/null; then
  have_tcp=1
fi
if [[ -z "$algorithms" ]]; then
  algorithms="ring"
  "$bin/all_reduce" --help 2>/dev/null | grep -q automatic && algorithms="automatic ring"
fi

results="$build/bench-results"
((keep)) || rm -rf "$results"
mkdir -p "$results"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --allow-run-as-root --oversubscribe)
# Open MPI binds each process to a core when ranks <= cores (its default for np <= 2) and not
# when ranks outnumber cores; gcl's harness does the same with its default --bind auto.
meta() { printf '%s=%s\n' "$1" "$2" >>"$results/meta.txt"; }
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta machine "$(uname -n), $(nproc) cores visible"
meta cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
meta memory "$(free -g | awk '/Mem:/{print $2 " GiB"}')"
meta kernel "$(uname -r)"
meta compiler "$(c++ --version | head -1)"
meta openmpi "$(mpirun --version 2>/dev/null | head -1)"
meta load_before "$(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min; the machine is shared: others were compiling)"
meta reps "$reps (each value: median over iterations of the slowest rank; tables: median over repetitions)"
meta mode "sizes $min..$max x$factor; iterations $iters_small below 1 MiB, $iters_large from 1 MiB; warmup $warmup; ranks $ranks; transports $transports"

step "machine limits"
"$bin/machine_limits" --bytes 256M --threads 2 --tcp-bytes 1G --csv | tee -a "$results/limits.csv"

source "$repo/benchmark/sweep.sh"  # gcl_sweep NAME CMD...: one sweep, CSV rows to $results/NAME.csv

step "sweeps: collectives [$collectives], P in [$ranks], $reps repetitions"
for rep in $(seq 1 "$reps"); do
  for p in $ranks; do
    for c in $collectives; do
      algs="default"
      [[ $c == all_reduce ]] && algs="$algorithms"
      if [[ " $transports " == *" inproc "* ]]; then
        for a in $algs; do
          aopt=(); [[ $a != default ]] && aopt=(--algorithm "$a")
          gcl_sweep "r${rep}_${c}_p${p}_inproc_$a" "$bin/$c" --world-size "$p" "${aopt[@]}" --label inproc
        done
        gcl_sweep "r${rep}_${c}_p${p}_vader" "${mpirun[@]}" -n "$p" --mca btl self,vader "$bin/mpi/$c" --label vader
      fi
      if [[ " $transports " == *" tcp "* ]]; then
        if ((have_tcp)); then
          for a in $algs; do
            aopt=(); [[ $a != default ]] && aopt=(--algorithm "$a")
            gcl_sweep "r${rep}_${c}_p${p}_tcp_$a" "$repo/tools/gcl-launch" -n "$p" -- "$bin/$c" --transport tcp "${aopt[@]}" --label tcp
          done
        fi
        gcl_sweep "r${rep}_${c}_p${p}_mpitcp" "${mpirun[@]}" -n "$p" --mca btl self,tcp --mca btl_tcp_if_include lo "$bin/mpi/$c" --label mpitcp
      fi
    done
  done
done

meta load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
meta commands "scripts/bench.sh $args
$bin/<collective> --world-size P [--algorithm A] --label inproc --csv ...
${mpirun[*]} -n P --mca btl self,vader $bin/mpi/<collective> --csv ...
tools/gcl-launch -n P -- $bin/<collective> --transport tcp --csv ...
${mpirun[*]} -n P --mca btl self,tcp --mca btl_tcp_if_include lo $bin/mpi/<collective> --csv ..."

step "report: $out_md, $img/bench_*.png"
python3 "$repo/benchmark/report.py" "$results" "$out_md" "$img"
echo "bench.sh: wrote $out_md" >&2
