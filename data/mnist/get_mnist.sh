#!/usr/bin/env bash
# Prepares MNIST for dlcaffe: takes the four original gzipped IDX files,
# checks their md5, gunzips them into data/mnist/ and converts them with
# convert_mnist_data into examples/mnist/mnist_train_lmdb and
# examples/mnist/mnist_test_lmdb (the paths models/lenet reads).
#
# The .gz files come from, first found:
#   1. $MNIST_DIR, if set;
#   2. ../shared/data/mnist next to the repository root, if that folder exists;
#   3. a download (yann.lecun.com, then mirrors) into data/mnist/.
# convert_mnist_data is taken from $DLCAFFE_BUILD_DIR/tools (default build/tools).
#
# Running it again skips whatever is already complete: every output appears
# under its final name only once it has been written in full. Nothing here is
# tracked by git (see .gitignore); never commit the data set.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
raw_dir="$root/data/mnist"
db_dir="$root/examples/mnist"
build_dir="${DLCAFFE_BUILD_DIR:-$root/build}"
convert="$build_dir/tools/convert_mnist_data"
shared_dir="$root/../shared/data/mnist"
mirrors=(
  "http://yann.lecun.com/exdb/mnist"
  "https://ossci-datasets.s3.amazonaws.com/mnist"
  "https://storage.googleapis.com/cvdf-datasets/mnist"
)

# name -> md5 of name.gz, and the size of the gunzipped file.
declare -A gz_md5=(
  [train-images-idx3-ubyte]=f68b3c2dcbeaaa9fbdd348bbdeb94873
  [train-labels-idx1-ubyte]=d53e105ee54ea40749a09fcbcd1e9432
  [t10k-images-idx3-ubyte]=9fb629c4189551a2d022fa330f9573f3
  [t10k-labels-idx1-ubyte]=ec29112dd5afa0611ce80d1b7f02629c
)
declare -A raw_bytes=(
  [train-images-idx3-ubyte]=47040016
  [train-labels-idx1-ubyte]=60008
  [t10k-images-idx3-ubyte]=7840016
  [t10k-labels-idx1-ubyte]=10008
)

say() { echo "get_mnist: $*" >&2; }
die() { say "error: $*"; exit 1; }

# Temporary files carry names .gitignore already covers; removed on failure.
temporaries=()
cleanup() { [ ${#temporaries[@]} -eq 0 ] || rm -rf "${temporaries[@]}"; }
trap cleanup EXIT

md5_of() { md5sum "$1" | cut -d' ' -f1; }

file_size() { stat -c %s "$1"; }

download() {  # url destination
  if command -v curl > /dev/null; then
    curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1"
  elif command -v wget > /dev/null; then
    wget -q --tries=3 --timeout=20 -O "$2" "$1"
  else
    die "neither curl nor wget is installed to download $1"
  fi
}

# Prints the path of a verified name.gz, downloading it if no local copy exists.
find_gz() {
  local name="$1" gz
  if [ -n "${MNIST_DIR:-}" ]; then
    gz="$MNIST_DIR/$name.gz"
    [ -f "$gz" ] || die "MNIST_DIR=$MNIST_DIR has no $name.gz"
  elif [ -d "$shared_dir" ]; then
    gz="$shared_dir/$name.gz"
    [ -f "$gz" ] || die "$shared_dir has no $name.gz"
  else
    gz="$raw_dir/$name.gz"
    if [ ! -f "$gz" ] || [ "$(md5_of "$gz")" != "${gz_md5[$name]}" ]; then
      local partial="$raw_dir/.partial-$name.gz" mirror
      temporaries+=("$partial")
      for mirror in "${mirrors[@]}"; do
        say "downloading $mirror/$name.gz"
        if download "$mirror/$name.gz" "$partial" &&
           [ "$(md5_of "$partial")" = "${gz_md5[$name]}" ]; then
          mv "$partial" "$gz"
          break
        fi
        say "no good copy of $name.gz from $mirror"
        rm -f "$partial"
      done
      [ -f "$gz" ] || die "could not download $name.gz from any mirror"
    fi
  fi
  local md5
  md5="$(md5_of "$gz")"
  [ "$md5" = "${gz_md5[$name]}" ] ||
    die "$gz has md5 $md5, expected ${gz_md5[$name]} (corrupt or not the MNIST file)"
  echo "$gz"
}

unpack() {
  local name="$1" raw="$raw_dir/$1"
  if [ -f "$raw" ] && [ "$(file_size "$raw")" = "${raw_bytes[$name]}" ]; then
    say "$raw is already there"
    return
  fi
  local gz partial="$raw_dir/.partial-$name"
  gz="$(find_gz "$name")"
  temporaries+=("$partial")
  gunzip -c "$gz" > "$partial"
  [ "$(file_size "$partial")" = "${raw_bytes[$name]}" ] ||
    die "$gz unpacks to $(file_size "$partial") bytes, expected ${raw_bytes[$name]}"
  mv "$partial" "$raw"
  say "unpacked $raw"
}

convert_split() {  # images labels db
  local images="$raw_dir/$1" labels="$raw_dir/$2" db="$db_dir/$3"
  if [ -f "$db/data.mdb" ]; then
    say "$db is already there"
    return
  fi
  [ -x "$convert" ] || die "$convert not found: build the tools first (scripts/build.sh) or set DLCAFFE_BUILD_DIR"
  local partial="$db_dir/.incomplete_$3"
  rm -rf "$partial"
  temporaries+=("$partial")
  say "converting $1 into $db"
  "$convert" --backend=lmdb "$images" "$labels" "$partial"
  rm -rf "$db"  # an empty leftover directory, if any
  mv "$partial" "$db"
}

mkdir -p "$raw_dir" "$db_dir"
for name in train-images-idx3-ubyte train-labels-idx1-ubyte \
            t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  unpack "$name"
done
convert_split train-images-idx3-ubyte train-labels-idx1-ubyte mnist_train_lmdb
convert_split t10k-images-idx3-ubyte t10k-labels-idx1-ubyte mnist_test_lmdb
say "done: $db_dir/mnist_train_lmdb and $db_dir/mnist_test_lmdb"
