#!/usr/bin/env bash
# The long forms of the tests, for a nightly run (not CI): every test at
# DLCAFFE_NIGHTLY=1 depth (tests/util/test_depth.hpp) — every GEMM
# configuration in every transpose, the training runs to their full accuracy
# (ViT on MNIST to 97 % and 98 %, LeNet in 16 bits to float32's accuracy
# after 1,000 iterations, ...) — on the default device and on Intel's CPU
# runtime, then each fuzz target for FUZZ_SECONDS (default 600).
#
#   scripts/nightly.sh [ctest args...]
#
# It takes hours on 2 cores; CI (scripts/test.sh) runs the short forms.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DLCAFFE_NIGHTLY=1
export FUZZ_SECONDS="${FUZZ_SECONDS:-600}"
exec bash "$root/scripts/test.sh" "$@"
