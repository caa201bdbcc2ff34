#!/usr/bin/env bash
# The main job: install what is missing, build, prepare MNIST, and train LeNet
# with Caffe's schedule on the default OpenCL device.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh
bash scripts/build.sh
export DLCAFFE_BUILD_DIR="${DLCAFFE_BUILD_DIR:-$root/build}"
bash data/mnist/get_mnist.sh
"$DLCAFFE_BUILD_DIR/tools/dlcaffe" train --solver=models/lenet/lenet_solver.prototxt "$@"
