#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer: builds
# everything instrumented into ${DLCAFFE_SANITIZE_BUILD_DIR:-build-sanitize}
# and runs ctest there. Any report fails the test that caused it (leaks too);
# tests/sanitizers/lsan.supp lists only the OpenCL driver stack's own
# lifetime allocations. Extra arguments go to ctest (e.g. -R test_net).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DLCAFFE_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
bash "$root/scripts/install_deps.sh"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDLCAFFE_SANITIZE=address,undefined "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
DLCAFFE_BUILD_DIR="$build" bash "$root/data/mnist/get_mnist.sh"

# fast_unwind_on_malloc=0: OpenMPI's plugins have no frame pointers and are
# unloaded before the leak report, so only the slow unwinder reaches the
# libopen-pal frames below them that lsan.supp names (the MPI tests).
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0:fast_unwind_on_malloc=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp:${UBSAN_OPTIONS:-}"
cd "$build"
ctest --output-on-failure --timeout 3000 -j "$(nproc)" "$@"
