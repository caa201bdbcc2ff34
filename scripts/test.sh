#!/usr/bin/env bash
# The tests: install what is missing, build, prepare MNIST (the end-to-end test
# trains on it), and run the whole GoogleTest suite through ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
bash scripts/build.sh
export DLCAFFE_BUILD_DIR="${DLCAFFE_BUILD_DIR:-$root/build}"
bash data/mnist/get_mnist.sh
cd "$DLCAFFE_BUILD_DIR"
ctest --output-on-failure --timeout 1500 "$@"
