#!/usr/bin/env bash
# Prints the path of a Python interpreter that has ONNX Runtime (for
# bench/ort_ref.py), installing it first if needed. Debian has no onnxruntime
# package, so it comes from PyPI into a virtual environment,
# ${ORT_VENV:-$HOME/.cache/dlcaffe/ort-venv}, made with --system-site-packages
# so that Debian's python3-torch, python3-torchvision, python3-onnx and
# python3-numpy stay visible. Always /usr/bin/python3: the python3 first on
# PATH may be another interpreter without torch.
#
#   py=$(bash bench/ort_env.sh) && "$py" bench/ort_ref.py --batch 1 --nets resnet18
#
# Not pinned: the newest wheel (1.32.0 when this was written, manylinux x86_64,
# Requires-Python >= 3.11) installs on Debian 12's Python 3.11, and once a
# release drops 3.11 pip skips it by its Requires-Python and takes the newest
# that still fits. ORT_VERSION=X.Y.Z installs that version instead (a venv
# that already imports onnxruntime is used as it is: delete it to change).
# All of pip's output goes to stderr; stdout is the interpreter's path only.
set -euo pipefail
venv="${ORT_VENV:-$HOME/.cache/dlcaffe/ort-venv}"
py="$venv/bin/python"
if ! [ -x "$py" ] || ! "$py" -c 'import onnxruntime' >/dev/null 2>&1; then
  echo "ort_env: installing onnxruntime from PyPI into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  # Debian's numpy stays: torch 1.13 (python3-torch) is built against numpy 1
  # and would not import beside a numpy 2 that pip might otherwise pull in.
  # (onnxruntime also wants protobuf >= 4.25.8, newer than Debian's 4.21, so
  # pip puts one into the venv; only the venv sees it.)
  sysnumpy=$(/usr/bin/python3 -c 'import numpy; print(numpy.__version__)')
  "$py" -m pip install --disable-pip-version-check -q \
    "onnxruntime${ORT_VERSION:+==$ORT_VERSION}" "numpy==$sysnumpy" >&2
  "$py" -c 'import onnxruntime' >&2
fi
echo "$py"
