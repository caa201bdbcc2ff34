#!/usr/bin/env bash
# Runs BVLC Caffe's own pycaffe tests (python/caffe/test/*.py of Caffe's
# last commit, 9b89154) against dlcaffe's `import caffe`, unchanged.
#
#   scripts/bvlc_pycaffe_tests.sh [CAFFE_CHECKOUT] [pytest flags...]
#
# CAFFE_CHECKOUT is a clone of https://github.com/BVLC/caffe (its git
# history or work tree); without it the ten test files are downloaded from
# GitHub at that commit, each checked against its checksum, into
# ${XDG_CACHE_HOME:-~/.cache}/dlcaffe/bvlc-pycaffe-tests. Not part of CI,
# which cannot reach GitHub; docs/python.md keeps the last result. The
# build is ${DLCAFFE_BUILD_DIR:-build}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DLCAFFE_BUILD_DIR:-$root/build}"
commit=9b891540183ddc834a02b2bd81b31afae71b2153
cache="${XDG_CACHE_HOME:-$HOME/.cache}/dlcaffe/bvlc-pycaffe-tests"
checksums="3608c478e37ed2de8898b0079030e748c234e1eccad9493a85cbf5f0b8c32e56  test_coord_map.py
9e61669f7ff9e42909a8b4d6f9a0a39960688a9bc2f0e1270b84d0b87136a928  test_draw.py
7da5293b6f837bc5793643e796866bd7930a8dfae3a4c1c66e6a1b2df6851b1c  test_io.py
9e2a015b846652dbb457126934aac47df425f9899c778c57a2e914906463626a  test_layer_type_list.py
e52b4825180e2e1c5dd4d01b22dc622f3e1d6c53e161737ebb24b3f7660cee44  test_nccl.py
1550253bc35ec53e87f461ce8c1e950dd87eb36c6770c15e5eae1d31d3cce64b  test_net.py
942585284273e3e743cfcf4e65ca164f6e33ff0a50515bc87fc468b120f24f8e  test_net_spec.py
fb144bd14d46d5d480c0dbfe30a448336b68af1cdcfc0e00afeae8309a29c96e  test_python_layer.py
c4441ca8066e8d0533e56bf0ce631b8f1100c710a0ff902ec78e67c32e72b9fe  test_python_layer_with_param_str.py
a1e9cff0120774365560658f3553fbd13a130232525e519c47303b365a347be7  test_solver.py"

# Caffe's layout: the tests in python/caffe/test, models/ and examples/ three
# folders up (test_draw draws every prototxt there: Caffe's own from a
# checkout, dlcaffe's otherwise).
work="$(mktemp -d "${TMPDIR:-/tmp}/bvlc_pycaffe_tests.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tests="$work/python/caffe/test"
mkdir -p "$tests"
names=$(echo "$checksums" | awk '{print $2}')
if [ $# -gt 0 ] && [ -d "$1" ]; then
  checkout="$1"; shift
  if [ -d "$checkout/python/caffe/test" ]; then
    for name in $names; do cp "$checkout/python/caffe/test/$name" "$tests/"; done
    cp -r "$checkout/models" "$checkout/examples" "$work/"
  else  # a bare repository
    for name in $names; do
      git --git-dir="$checkout" show "$commit:python/caffe/test/$name" > "$tests/$name"
    done
    git --git-dir="$checkout" archive "$commit" models examples | tar -x -C "$work"
  fi
else
  if [ ! -f "$cache/complete" ]; then
    mkdir -p "$cache"
    for name in $names; do
      wget -q -O "$cache/$name" \
        "https://raw.githubusercontent.com/BVLC/caffe/$commit/python/caffe/test/$name"
    done
    touch "$cache/complete"
  fi
  cp "$cache"/test_*.py "$tests/"
  cp -r "$root/models" "$root/examples" "$work/"
fi
(cd "$tests" && echo "$checksums" | sha256sum --check --quiet) ||
  { echo "bvlc_pycaffe_tests: the test files differ from Caffe's commit $commit" >&2; exit 1; }

cd "$tests"
PYTHONPATH="$build/python:$tests" /usr/bin/python3 -m pytest -p no:cacheprovider "$@" .
