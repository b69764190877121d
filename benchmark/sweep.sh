# Sourced by scripts/bench.sh and benchmark/peers/vs_torch.sh: one sweep of a benchmark program
# that prints gcl's CSV columns (gcl's own, Open MPI's, Gloo's, torch's), in two size ranges
# with more iterations below 1 MiB (the second range only if $max reaches it), appended to
# $results/NAME.csv; a rank prefix "[0] " (tools/gcl-launch --tag-output) is removed and other ranks' lines
# dropped. Uses the caller's $results, $min, $max, $factor, $iters_small, $iters_large and
# $warmup, and adds the options in the array $sweep_extra (if set; e.g. --barrier) to every
# command. Says on stderr when each sweep starts and ends.
#
#   gcl_sweep NAME CMD...

# "4", "4K", "64M", "1G" -> bytes (binary multiples, as the programs read them).
gcl_bytes() {
  local v="${1%B}" m=1
  case "$v" in
    *[Kk]) m=1024; v="${v%?}" ;;
    *[Mm]) m=$((1 << 20)); v="${v%?}" ;;
    *[Gg]) m=$((1 << 30)); v="${v%?}" ;;
  esac
  echo $((v * m))
}

gcl_sweep() {
  local name="$1"; shift
  local extra=(${sweep_extra[@]+"${sweep_extra[@]}"}) small_max=512K t0=$SECONDS
  local large=$(($(gcl_bytes "$max") >= (1 << 20)))
  ((large)) || small_max="$max"
  # Progress on stderr: a line when the sweep starts and one when it ends (the rows go to the CSV).
  echo "  $name: $min .. $max ..." >&2
  {
    "$@" --min-bytes "$min" --max-bytes "$small_max" --factor "$factor" --iters "$iters_small" --warmup "$warmup" --csv ${extra[@]+"${extra[@]}"}
    if ((large)); then
      "$@" --min-bytes 1M --max-bytes "$max" --factor "$factor" --iters "$iters_large" --warmup "$warmup" --csv ${extra[@]+"${extra[@]}"}
    fi
  } 2>"$results/$name.err" | sed -e 's/^\[0\] //' | grep -v '^\[[0-9]*\] ' >>"$results/$name.csv" || {
    echo "$(basename "$0"): $name failed:" >&2
    cat "$results/$name.err" >&2
    return 1
  }
  echo "  $name: done, $((SECONDS - t0)) s" >&2
}
