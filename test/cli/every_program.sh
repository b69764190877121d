#!/usr/bin/env bash
# Every gcl program, as a user first meets it (doc/cli.md): --help and --version print and exit
# 0; a wrong flag and a wrong value are one line on stderr naming the flag, a non-zero exit
# code, nothing on stdout; and none of the four does anything else: no package installed, no
# build, no download, no file written (apt-get, npm, cmake, ... are replaced by stubs that
# record being called, and the working directory must stay empty).
#
# Usage: every_program.sh SOURCE_DIR PROGRAM...   (the built programs; the scripts and tools
# of SOURCE_DIR are added here). A program is known by its file name (the table below).
set -u
src=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin" "$tmp/work" "$tmp/home"
for stub in apt-get apt dpkg sudo npm cmake make ctest curl wget git gnuplot mpirun mpiexec; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/called"\nexit 1\n' "$stub" "$tmp" >"$tmp/bin/$stub"
  chmod +x "$tmp/bin/$stub"
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check NAME PROGRAM [BAD_VALUE_ARGS... :: FLAG_NAMED]: the four runs.
check() {
  local name=$1 prog=$2
  shift 2
  local bad=() flag=""
  if (($#)); then
    while [[ $1 != :: ]]; do bad+=("$1"); shift; done
    flag=$2
  fi
  run() {  # run ARGS...: into $tmp/out, $tmp/err, $code
    (cd "$tmp/work" && HOME="$tmp/home" PATH="$tmp/bin:$PATH" timeout 60 "$prog" "$@" \
      </dev/null >"$tmp/out" 2>"$tmp/err")
    code=$?
  }
  run --help
  ((code == 0)) || fail "$name --help exited with $code: $(head -c 300 "$tmp/err")"
  [[ -s $tmp/out ]] || fail "$name --help printed no usage on stdout"
  [[ ! -s $tmp/err ]] || fail "$name --help wrote on stderr: $(head -c 300 "$tmp/err")"
  run --version
  ((code == 0)) || fail "$name --version exited with $code"
  grep -Eq '^[^ ]+.*\(gcl [0-9]+\.[0-9]+\.[0-9]+\)$' "$tmp/out" && (($(wc -l <"$tmp/out") == 1)) ||
    fail "$name --version printed '$(head -c 200 "$tmp/out")'"
  one_error() {  # one_error WHAT FLAG
    ((code != 0)) || fail "$name $1 exited with 0"
    ((code != 124)) || fail "$name $1 ran until the timeout"
    [[ ! -s $tmp/out ]] || fail "$name $1 printed on stdout: $(head -c 200 "$tmp/out")"
    (($(wc -l <"$tmp/err") == 1)) || fail "$name $1: not one line on stderr: $(head -c 400 "$tmp/err")"
    grep -qF -- "$2" "$tmp/err" || fail "$name $1: the error does not name $2: $(cat "$tmp/err")"
  }
  run --no-such-flag
  one_error --no-such-flag --no-such-flag
  if ((${#bad[@]})); then
    run "${bad[@]}"
    one_error "${bad[*]}" "$flag"
  fi
  if [[ -e $tmp/called ]]; then
    fail "$name called: $(cat "$tmp/called")"
    rm -f "$tmp/called"
  fi
  if [[ -n $(ls -A "$tmp/work") ]]; then
    fail "$name left files behind: $(ls -A "$tmp/work")"
    rm -rf "${tmp:?}/work/"* "${tmp:?}/work/".[!.]* 2>/dev/null
  fi
  echo "ok: $name"
}

for prog in "$@"; do
  [[ $prog == /* ]] || prog=$PWD/$prog
  [[ -x $prog ]] || { fail "$prog is not built"; continue; }
  name=$(basename "$prog")
  case "$prog" in */mpi/*) name="mpi/$name" ;; */gloo/*) name="gloo/$name" ;; esac
  case "$name" in
    hello | send_recv) check "$name" "$prog" --world-size 0 :: --world-size ;;
    all_reduce_algorithms | message_counts) check "$name" "$prog" --count -5 :: --count ;;
    implicit_bias) check "$name" "$prog" ;;
    train_lenet5) check "$name" "$prog" --algorithm rign :: --algorithm ;;
    all_reduce) check "$name" "$prog" --min-bytes 4X :: --min-bytes
      check "$name" "$prog" --ring-block 4X :: "--ring-block: " ;;
    broadcast | reduce_scatter | all_gather | all_to_all)
      check "$name" "$prog" --min-bytes 4X :: --min-bytes ;;
    mpi/* | gloo/*) check "$name" "$prog" --factor 1 :: --factor ;;
    machine_limits) check "$name" "$prog" --threads 0 :: --threads ;;
    automatic_sweep) check "$name" "$prog" --factor 1 :: --factor ;;
    default_vs_fixed) check "$name" "$prog" --rounds 0 :: --rounds
      check "$name" "$prog" --pool :: "--pool: --transport inproc has no pool" ;;
    overlap) check "$name" "$prog" --bytes 4X :: --bytes ;;
    predict_vs_measure) check "$name" "$prog" --iters 0 :: --iters ;;
    tcp_link_bench) check "$name" "$prog" tree_vs_ring -n 0 :: --iters ;;
    *) fail "no table entry for $prog" ;;
  esac
done

# The tools and scripts of the source tree.
check gcl-launch "$src/tools/gcl-launch" -p 0 -- true :: --world-size
check fetch-mnist.sh "$src/tools/fetch-mnist.sh" "$tmp/work/a" "$tmp/work/b" :: "one destination"
check demo.sh "$src/scripts/demo.sh"
check test.sh "$src/scripts/test.sh"
check speedup.sh "$src/scripts/speedup.sh"
check bench.sh "$src/scripts/bench.sh" --reps x :: --reps
check vs_torch.sh "$src/benchmark/peers/vs_torch.sh" --ranks 0 :: --ranks
check predict_vs_measure.sh "$src/benchmark/predict_vs_measure.sh" "$tmp/nowhere" :: BUILD_DIR
check shaped.sh "$src/benchmark/tcp/shaped.sh" /bin/true 0 :: ranks
check two_hosts.sh "$src/benchmark/two_hosts.sh" /bin/true 0 :: ranks_per_host
check compare_throughput.sh "$src/example/lenet5/peer/compare_throughput.sh" "$tmp" 0 :: RUNS
check report.py "$src/benchmark/report.py" "$tmp/nowhere" a b :: RESULTS
check vs_torch_report.py "$src/benchmark/peers/vs_torch_report.py" "$tmp/nowhere" a :: RESULTS
check speedup_report.py "$src/scripts/speedup_report.py" table "$tmp/nowhere" :: OUT
check torch_all_reduce.py "$src/benchmark/peers/torch_all_reduce.py" --factor 1 :: --factor
check lenet5_torch.py "$src/example/lenet5/peer/lenet5_torch.py" --batch 0 :: --batch

if ((failures)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "every program: --help, --version, a wrong flag and a wrong value behave"
