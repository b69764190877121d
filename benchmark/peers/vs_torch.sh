#!/usr/bin/env bash
# gcl all_reduce side by side with torch.distributed (its Gloo backend), in one run: installs
# what it needs (apt-get, only what is missing: python3-torch), builds the all_reduce benchmark
# in Release, then for every repetition and P runs, one after the other:
#   gcl tcp (tools/gcl-launch, one process per rank)   vs  torch.distributed gloo (one process
#   gcl inproc (threads, what gcl offers on one machine)     per rank, TCP on loopback)
# with the same sizes, iterations, barrier and checks (benchmark/peers/torch_all_reduce.py), and
# writes doc/vs_torch.md.
#
#   benchmark/peers/vs_torch.sh                      # P = 2 and 4, 8 B .. 64 MiB x4, 3 repetitions
#   benchmark/peers/vs_torch.sh --quick              # 1 repetition, fewer iterations
#   benchmark/peers/vs_torch.sh --ranks "2" --reps 5 --output /tmp/vs_torch.md
#
# Environment: GCL_BUILD_DIR (default build-bench/), GCL_JOBS (default nproc).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$repo/scripts/cli.sh"
gcl_cli_help_version "$@"
build="${GCL_BUILD_DIR:-$repo/build-bench}"
jobs="${GCL_JOBS:-$(nproc)}"
ranks="2 4" reps=3 min=8 max=64M factor=4 iters_small=50 iters_large=10 warmup=3
install=1 out_md="$repo/doc/vs_torch.md"
while (($#)); do
  case "$1" in
    --ranks | --reps | --max-bytes | --output) gcl_cli_needs "$1" 1 "$@" ;;
  esac
  case "$1" in
    --quick) reps=1; factor=8; iters_small=20; iters_large=5; shift ;;
    --ranks) ranks="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --max-bytes) max="$2"; shift 2 ;;
    --no-install) install=0; shift ;;
    --output) out_md="$2"; shift 2 ;;
    *) gcl_cli_error "unknown option '$1'" ;;
  esac
done
gcl_cli_each --ranks "$ranks" gcl_cli_positive
gcl_cli_positive --reps "$reps"
gcl_cli_size --max-bytes "$max"

if ((install)); then
  source "$repo/scripts/packages.sh"
  gcl_install_packages python3-torch
fi
# Debian's torch is in the system python, which a pyenv or venv python3 on PATH may hide.
py=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null; then
    py="$candidate"; break
  fi
done
[[ -n $py ]] || { echo "vs_torch.sh: no python3 with torch.distributed and Gloo (apt-get install python3-torch)" >&2; exit 1; }

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGCL_BUILD_TESTS=OFF \
  -DGCL_BUILD_EXAMPLES=OFF -DGCL_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" -j "$jobs" --target bench_all_reduce >/dev/null
bin="$build/benchmark"
results="$build/vs-torch-results"
rm -rf "$results"
mkdir -p "$results"
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine=$(nproc) cores visible, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "torch=$("$py" -c 'import torch; print(torch.__version__)')"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "mode=sizes $min..$max x$factor; iterations $iters_small below 1 MiB, $iters_large from 1 MiB; warmup $warmup; ranks $ranks; $reps repetitions"
} >"$results/meta.txt"

source "$repo/benchmark/sweep.sh"  # gcl_sweep NAME CMD...: one sweep, CSV rows to $results/NAME.csv

for rep in $(seq 1 "$reps"); do
  for p in $ranks; do
    gcl_sweep "r${rep}_p${p}_torch" "$py" "$repo/benchmark/peers/torch_all_reduce.py" --world-size "$p" --label torchgloo
    # --barrier: torch_all_reduce.py times each call alone after a barrier; gcl does the same here.
    gcl_sweep "r${rep}_p${p}_tcp" "$repo/tools/gcl-launch" -p "$p" -- "$bin/all_reduce" --transport tcp --algorithm automatic --barrier --label tcp
    gcl_sweep "r${rep}_p${p}_inproc" "$bin/all_reduce" --world-size "$p" --algorithm automatic --barrier --label inproc
  done
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$results/meta.txt"
python3 "$repo/benchmark/peers/vs_torch_report.py" "$results" "$out_md"
echo "wrote $out_md" >&2
