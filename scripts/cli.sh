# Sourced by gcl's shell scripts: the conventions of every gcl program's command line
# (doc/cli.md): --help prints the script's header comment and exits 0, --version prints
# "NAME (gcl X.Y.Z)" from include/gcl/version.hpp and exits 0, both before anything else
# happens; anything wrong is one line on stderr, "NAME: what (see --help)", and exit code 2.
#
#   source "$repo/scripts/cli.sh"
#   gcl_cli_no_options "$@"        # a script without options: only --help and --version
#   gcl_cli_help_version "$@"      # handles --help/--version anywhere in "$@" (then exits)
#   gcl_cli_error "what"           # prints the one line and exits 2
#   gcl_cli_positive NAME VALUE    # VALUE must be a positive integer, else gcl_cli_error

gcl_cli_name="$(basename "$0")"
gcl_cli_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

gcl_cli_version() {
  local v
  v=$(sed -n 's/^#define GCL_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9][0-9]*\).*/\2/p' \
        "$gcl_cli_root/include/gcl/version.hpp" | paste -sd.)
  echo "$gcl_cli_name (gcl $v)"
}

# The comment block after the shebang, without its "# ".
gcl_cli_help() {
  awk 'NR == 1 && /^#!/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

gcl_cli_error() {
  echo "$gcl_cli_name: $* (see --help)" >&2
  exit 2
}

gcl_cli_help_version() {
  local a
  for a in "$@"; do
    [[ $a == -- ]] && break
    case "$a" in
      -h | --help) gcl_cli_help; exit 0 ;;
      --version) gcl_cli_version; exit 0 ;;
    esac
  done
}

gcl_cli_no_options() {
  gcl_cli_help_version "$@"
  (($# == 0)) || gcl_cli_error "unexpected argument '$1': this script takes no arguments (settings come from the environment)"
}

gcl_cli_positive() {
  [[ $2 =~ ^[0-9]+$ && $2 -ge 1 ]] || gcl_cli_error "$1: '$2' is not a positive integer"
}

# gcl_cli_needs OPTION N ARGS...: OPTION (at the head of ARGS) must have N values after it.
gcl_cli_needs() {
  local opt=$1 n=$2
  shift 2
  (($# > n)) || gcl_cli_error "$opt needs $n value(s)"
}

# gcl_cli_size OPTION VALUE: 8, 64K, 64M, 1G (what the programs accept).
gcl_cli_size() {
  [[ $2 =~ ^[0-9]+[KkMmGg]?B?$ ]] || gcl_cli_error "$1: '$2' is not a size such as 8, 64K, 64M, 1G"
}

# gcl_cli_number OPTION VALUE: a non-negative decimal number.
gcl_cli_number() {
  [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || gcl_cli_error "$1: '$2' is not a non-negative number"
}

# gcl_cli_each OPTION "LIST" CHECK...: every word of LIST passes CHECK (gcl_cli_positive, or
# gcl_cli_member "a b c").
gcl_cli_each() {
  local opt=$1 list=$2 w
  shift 2
  [[ -n ${list// /} ]] || gcl_cli_error "$opt: empty list"
  for w in $list; do "$@" "$opt" "$w"; done
}

# gcl_cli_member "ALLOWED WORDS" OPTION VALUE
gcl_cli_member() {
  [[ " $1 " == *" $3 "* ]] || gcl_cli_error "$2: '$3' is not one of: $1"
}
