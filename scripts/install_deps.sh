#!/usr/bin/env bash
# Installs what dlcaffe needs from Debian 12 packages, and nothing when all of
# it is present already. Runs apt-get as root (directly, or through sudo).
# Then fetches ONNX's node tests from the onnx wheel on PyPI (once, into the
# user's cache; scripts/onnx_node_tests.sh), which test_onnx_node_tests runs,
# and Intel's OpenCL CPU runtime from PyPI into the build's folder
# (scripts/install_intel_opencl.sh): scripts/test.sh's second OpenCL
# implementation.
set -euo pipefail

packages=(
  g++ make cmake pkg-config
  libprotobuf-dev protobuf-compiler
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
  libgoogle-glog-dev libgflags-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  liblmdb-dev libgtest-dev
  libpcre2-dev  # tokenizer.json's pre-tokenizer regexes (src/data/bpe_tokenizer.cpp)
  libtinyxml2-dev  # PASCAL VOC's XML annotations (tools/convert_annoset.cpp)
  libonnx-dev libonnx-testdata
  python3 python3-pip python3-numpy python3-onnx python3-torch python3-torchvision
  python3-protobuf python3-matplotlib python3-pil graphviz
  libhdf5-dev pybind11-dev python3-dev python3-pytest python3-h5py python3-pydot python3-skimage
  python3-opencv  # OpenCV's DNN module: the detectors' agreement test (tests/python/test_opencv_detection.py)
  clang libclang-rt-14-dev
  libopenmpi-dev openmpi-bin
  iproute2  # ip netns: the two-host MPI test (scripts/two_hosts_mpi.sh)
  ca-certificates wget
  fortunes  # English text for the language model (tools/convert_text, models/char_gpt)
)

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != *"install ok installed"* ]]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all dependencies present"
else
  echo "install_deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
fi

bash "$(dirname "${BASH_SOURCE[0]}")/onnx_node_tests.sh" --fetch
bash "$(dirname "${BASH_SOURCE[0]}")/install_intel_opencl.sh"
