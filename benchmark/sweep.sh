# Sourced by scripts/bench.sh and benchmark/peers/vs_torch.sh: one sweep of a benchmark program
# that prints gcl's CSV columns (gcl's own, Open MPI's, torch's), in two size ranges with more
# iterations below 1 MiB, appended to $results/NAME.csv; a rank prefix "[0] " (tools/gcl-launch)
# is removed and other ranks' lines dropped. Uses the caller's $results, $min, $max, $factor,
# $iters_small, $iters_large and $warmup.
#
#   gcl_sweep NAME CMD...
gcl_sweep() {
  local name="$1"; shift
  {
    "$@" --min-bytes "$min" --max-bytes 512K --factor "$factor" --iters "$iters_small" --warmup "$warmup" --csv
    "$@" --min-bytes 1M --max-bytes "$max" --factor "$factor" --iters "$iters_large" --warmup "$warmup" --csv
  } 2>"$results/$name.err" | sed -e 's/^\[0\] //' | grep -v '^\[[0-9]*\] ' >>"$results/$name.csv" || {
    echo "$(basename "$0"): $name failed:" >&2
    cat "$results/$name.err" >&2
    return 1
  }
  echo "  $name" >&2
}
