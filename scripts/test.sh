#!/usr/bin/env bash
# The tests: install what is missing, build, prepare MNIST (the end-to-end test
# trains on it), and run the whole GoogleTest suite through ctest. Then every
# fuzz target runs briefly over its corpus (scripts/fuzz.sh, Clang with ASan
# and UBSan, FUZZ_SECONDS each: default 45, or 0 (skipped) when ctest
# arguments such as -R pick tests).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
bash scripts/build.sh
export DLCAFFE_BUILD_DIR="${DLCAFFE_BUILD_DIR:-$root/build}"
bash data/mnist/get_mnist.sh
(cd "$DLCAFFE_BUILD_DIR" && ctest --output-on-failure --timeout 1500 "$@")
fuzz_seconds="${FUZZ_SECONDS:-$([ $# -eq 0 ] && echo 45 || echo 0)}"
if [ "$fuzz_seconds" -gt 0 ]; then
  bash scripts/fuzz.sh "$fuzz_seconds"
fi
