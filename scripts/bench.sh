#!/usr/bin/env bash
# gcl side by side with Open MPI and Gloo, in one run: installs what it needs (apt-get, only
# what is missing), builds the benchmarks in Release, measures the machine's limits (memcpy,
# loopback TCP one way and duplex, a cache line's round trip, a switch between threads and
# between processes sharing a core), then for P = 2 and 4 and every repetition runs, one after
# the other so that they share the machine's state:
#   gcl inproc (threads)                     vs  Open MPI shared memory (--mca btl self,vader)
#   gcl shm (tools/gcl-launch, 1 proc/rank)  vs  Open MPI shared memory, and gcl's threads
#   gcl shm --pool (buffers in the job's pool) vs the same
#   gcl tcp (tools/gcl-launch, 1 proc/rank)  vs  Open MPI TCP (--mca btl self,tcp, lo)
#                                            and Gloo TCP (torch.distributed's CPU backend,
#                                                tools/gcl-launch, 1 proc/rank; no reduce_scatter;
#                                                skipped with a note if libgloo-dev is missing)
# and writes doc/benchmarks.md (tables with the ratios gcl vs Open MPI and gcl vs Gloo per
# size) and doc/img/bench_*.png (busbw and latency against size).
#
# Timing (every implementation alike, benchmark/common.hpp): per size, one barrier, then the
# calls back to back as a training loop makes them; a call's time is the slowest rank's; the
# median over calls is reported (up to --iters calls, fewer where they would exceed about
# --max-seconds). --barrier puts a barrier before every call instead and times each alone.
#
#   scripts/bench.sh                 # all five collectives, 4 B .. 64 MiB, 3 repetitions
#   scripts/bench.sh --quick         # all_reduce only, fewer sizes and calls, 1 repetition
#   scripts/bench.sh --barrier       # a barrier before every call (isolated latency)
#   scripts/bench.sh --collectives "all_reduce broadcast" --reps 5 --algorithms "ring automatic"
#   scripts/bench.sh --keep --collectives "all_gather" --factor 4   # add to the last results
#   scripts/bench.sh --quick --no-install --ranks 2 --max-bytes 4K --output /tmp/b/benchmarks.md
#
# Options: --quick, --collectives "C ...", --algorithms "A ...", --reps N, --ranks "P ...",
# --max-bytes B, --factor F, --transports "inproc shm tcp", --iters SMALL LARGE (most calls per
# size below / from 1 MiB), --max-seconds S (per size), --barrier, --no-install, --keep,
# --output DIR/benchmarks.md (images go to DIR/img).
# Environment: GCL_BUILD_DIR (default build-bench/), GCL_JOBS (default nproc).
set -euo pipefail
args="$*"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/cli.sh"
gcl_cli_help_version "$@"
build="${GCL_BUILD_DIR:-$repo/build-bench}"
jobs="${GCL_JOBS:-$(nproc)}"

collectives="all_reduce broadcast reduce_scatter all_gather all_to_all"
algorithms=""          # for all_reduce; empty: by_size (the default) and ring
reps=3
ranks="2 4"
min=4 max=64M factor=2
iters_small=500 iters_large=100 warmup=3  # most timed calls per size, below / from 1 MiB
max_seconds=1                              # ... fewer where they would take longer than this
barrier=0
limits_bytes=256M limits_tcp=1G
transports="inproc shm tcp"
install=1
keep=0
out_md="$repo/doc/benchmarks.md"
img="$repo/doc/img"
while (($#)); do
  case "$1" in
    --collectives | --algorithms | --reps | --ranks | --max-bytes | --factor | --transports | \
    --max-seconds | --output) gcl_cli_needs "$1" 1 "$@" ;;
    --iters) gcl_cli_needs "$1" 2 "$@" ;;
  esac
  case "$1" in
    --quick)
      collectives="all_reduce"; reps=1; factor=8; iters_small=100; iters_large=10; max_seconds=0.25
      limits_bytes=64M; limits_tcp=256M; shift ;;
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
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --barrier) barrier=1; shift ;;
    --output) out_md="$2"; img="$(dirname "$2")/img"; shift 2 ;;
    *) gcl_cli_error "unknown option '$1'" ;;
  esac
done
# Every value checked before anything is installed, built or run.
gcl_cli_each --collectives "$collectives" gcl_cli_member "all_reduce broadcast reduce_scatter all_gather all_to_all"
[[ -z $algorithms ]] || gcl_cli_each --algorithms "$algorithms" gcl_cli_member "tree ring direct parameter_server recursive_doubling halving_doubling automatic by_size"
gcl_cli_positive --reps "$reps"
gcl_cli_each --ranks "$ranks" gcl_cli_positive
gcl_cli_size --max-bytes "$max"
gcl_cli_number --factor "$factor"
gcl_cli_each --transports "$transports" gcl_cli_member "inproc shm tcp"
gcl_cli_positive --iters "$iters_small"
gcl_cli_positive --iters "$iters_large"
gcl_cli_number --max-seconds "$max_seconds"

step() { printf '\n== %s\n' "$*" >&2; }

if ((install)); then
  source "$repo/scripts/packages.sh"
  gcl_install_packages openmpi-bin libopenmpi-dev gnuplot-nox python3
  # Gloo is a peer we can do without: a failure here is reported, not fatal.
  gcl_install_packages libgloo-dev || echo "bench.sh: note: could not install libgloo-dev; Gloo is skipped" >&2
fi

step "configure and build (Release) in $build"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGCL_BUILD_TESTS=OFF \
  -DGCL_BUILD_EXAMPLES=OFF -DGCL_BUILD_BENCHMARKS=ON >/dev/null
targets=(machine_limits)
for c in $collectives; do targets+=("bench_$c" "mpi_$c"); done
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
bin="$build/benchmark"
[[ -x "$bin/mpi/all_reduce" ]] || { echo "bench.sh: Open MPI programs were not built (is libopenmpi-dev installed?)" >&2; exit 1; }
# Gloo's programs (benchmark/peers/gloo_bench.cpp: all but reduce_scatter) when CMake found it.
gloo_collectives=""
if grep -q '^GCL_BENCH_GLOO:INTERNAL=ON' "$build/CMakeCache.txt"; then
  gloo_targets=()
  for c in $collectives; do
    [[ $c == reduce_scatter ]] || { gloo_collectives+=" $c"; gloo_targets+=("gloo_$c"); }
  done
  if ((${#gloo_targets[@]})) && ! cmake --build "$build" -j "$jobs" --target "${gloo_targets[@]}"; then
    echo "bench.sh: note: the Gloo programs did not build; Gloo is skipped" >&2
    gloo_collectives=""
  fi
else
  echo "bench.sh: note: Gloo not found (Debian: libgloo-dev); Gloo is skipped" >&2
fi
# Whether the sweeps were built with gcl's TCP transport (Boost.Asio): a one-rank TCP job of one
# call answers, whatever generator built them.
have_tcp=0
if [[ " $transports " == *" tcp "* ]]; then
  if "$repo/tools/gcl-launch" -p 1 -- "$bin/${collectives%% *}" --transport tcp --min-bytes 4 \
    --max-bytes 4 --iters 1 --warmup 0 >/dev/null 2>&1; then
    have_tcp=1
  else
    echo "bench.sh: note: $bin/${collectives%% *} has no TCP transport (Boost.Asio, Debian" \
      "libboost-dev); gcl's TCP sweeps are skipped" >&2
  fi
fi
if [[ -z "$algorithms" ]]; then  # all_reduce's default (by_size), and ring for reference
  algorithms="ring"
  "$bin/all_reduce" --help 2>/dev/null | grep -q by_size && algorithms="by_size ring"
fi

results="$build/bench-results"
((keep)) || rm -rf "$results"
mkdir -p "$results"
# Options every sweep gets (benchmark/sweep.sh adds them to each command).
sweep_extra=(--max-seconds "$max_seconds")
((barrier)) && sweep_extra+=(--barrier)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --allow-run-as-root --oversubscribe)
# Open MPI binds each process to a core when ranks <= cores (its default for np <= 2) and not
# when ranks outnumber cores; gcl-launch does the same by default (--bind auto), and so does
# gcl's harness for its threads.
meta() { printf '%s=%s\n' "$1" "$2" >>"$results/meta.txt"; }
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta machine "$(uname -n), $(nproc) cores visible"
meta cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
meta memory "$(free -g | awk '/Mem:/{print $2 " GiB"}')"
meta kernel "$(uname -r)"
meta compiler "$(c++ --version | head -1)"
meta openmpi "$(mpirun --version 2>/dev/null | head -1)"
if [[ -n $gloo_collectives ]]; then
  meta gloo "Gloo $(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || echo '(version unknown)') (Debian libgloo-dev), transport tcp, ranks not pinned (as torch.distributed)"
else
  meta gloo "not measured (libgloo-dev missing or not built)"
fi
meta load_before "$(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min; the machine is shared: others were compiling)"
meta reps "$reps (each value: median over calls of the slowest rank's time; tables: median over repetitions)"
if ((barrier)); then
  meta timing "barrier: a barrier before every call, each call timed alone (--barrier)"
else
  meta timing "b2b: one barrier, then the calls back to back, a timestamp after each (the default)"
fi
meta mode "sizes $min..$max x$factor; up to $iters_small calls per size below 1 MiB, $iters_large from 1 MiB, fewer where they would take over ${max_seconds} s; warmup $warmup; ranks $ranks; transports $transports"

step "machine limits"
"$bin/machine_limits" --bytes "$limits_bytes" --threads 2 --tcp-bytes "$limits_tcp" --csv | tee -a "$results/limits.csv"

source "$repo/benchmark/sweep.sh"  # gcl_sweep NAME CMD...: one sweep, CSV rows to $results/NAME.csv

step "sweeps: collectives [$collectives], P in [$ranks], $reps repetitions"
for rep in $(seq 1 "$reps"); do
  for p in $ranks; do
    # A moment of idle between groups, so that the end of the last group's processes (up to
    # eight ranks giving back their memory) does not fall into this group's first sweep: in
    # two runs of 2026-11-27 the threads at P = 2, measured first after Gloo at P = 8, ran 2 to
    # 15x slower in three of five repetitions, and the next sweeps at normal speed.
    sleep 2
    for c in $collectives; do
      algs="default"
      [[ $c == all_reduce ]] && algs="$algorithms"
      # all_reduce's tables show the cost model's prediction beside each time ("pred us"): the
      # model calibrated on the sweep's own transport first (gcl::calibrate), not the defaults.
      # Not for automatic, which would then choose from it: users get automatic's defaults.
      model() { [[ $c == all_reduce && $1 != automatic ]] && echo --calibrate; }
      if [[ " $transports " == *" inproc "* ]]; then
        for a in $algs; do
          aopt=(); [[ $a != default ]] && aopt=(--algorithm "$a")
          gcl_sweep "r${rep}_${c}_p${p}_inproc_$a" "$bin/$c" --world-size "$p" "${aopt[@]}" $(model "$a") --label inproc
        done
      fi
      if [[ " $transports " == *" shm "* ]]; then
        for a in $algs; do
          aopt=(); [[ $a != default ]] && aopt=(--algorithm "$a")
          gcl_sweep "r${rep}_${c}_p${p}_shm_$a" "$repo/tools/gcl-launch" -p "$p" -- "$bin/$c" --transport shm "${aopt[@]}" $(model "$a") --label shm
        done
        # The same with the buffers in the job's pool (read in place), gcl's default algorithm.
        gcl_sweep "r${rep}_${c}_p${p}_shmpool" "$repo/tools/gcl-launch" -p "$p" -- "$bin/$c" --transport shm --pool $(model default) --label shm-pool
      fi
      if [[ " $transports " == *" inproc "* || " $transports " == *" shm "* ]]; then
        gcl_sweep "r${rep}_${c}_p${p}_vader" "${mpirun[@]}" -n "$p" --mca btl self,vader "$bin/mpi/$c" --label vader
      fi
      if [[ " $transports " == *" tcp "* ]]; then
        if ((have_tcp)); then
          for a in $algs; do
            aopt=(); [[ $a != default ]] && aopt=(--algorithm "$a")
            gcl_sweep "r${rep}_${c}_p${p}_tcp_$a" "$repo/tools/gcl-launch" -p "$p" -- "$bin/$c" --transport tcp "${aopt[@]}" $(model "$a") --label tcp
          done
        fi
        gcl_sweep "r${rep}_${c}_p${p}_mpitcp" "${mpirun[@]}" -n "$p" --mca btl self,tcp --mca btl_tcp_if_include lo "$bin/mpi/$c" --label mpitcp
        if [[ " $gloo_collectives " == *" $c "* ]]; then
          # Unbound, as torchrun leaves them (gcl-launch would bind them when P <= cores).
          gcl_sweep "r${rep}_${c}_p${p}_gloo" "$repo/tools/gcl-launch" -p "$p" --bind none -- "$bin/gloo/$c" --label gloo
        fi
      fi
    done
  done
done

meta load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
meta commands "scripts/bench.sh $args
$bin/<collective> --world-size P [--algorithm A] --label inproc --csv ${sweep_extra[*]} ...
${mpirun[*]} -n P --mca btl self,vader $bin/mpi/<collective> --csv ${sweep_extra[*]} ...
tools/gcl-launch -p P -- $bin/<collective> --transport tcp --csv ${sweep_extra[*]} ...
${mpirun[*]} -n P --mca btl self,tcp --mca btl_tcp_if_include lo $bin/mpi/<collective> --csv ${sweep_extra[*]} ...
tools/gcl-launch -p P -- $bin/gloo/<collective> --csv ${sweep_extra[*]} ..."

step "report: $out_md, $img/bench_*.png"
python3 "$repo/benchmark/report.py" "$results" "$out_md" "$img"
echo "bench.sh: wrote $out_md" >&2
