#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (Clang, with AddressSanitizer and
# UBSan, coverage from all of dlcaffe) into ${DLCAFFE_FUZZ_BUILD_DIR:-build-fuzz}
# and runs each for SECONDS (default 60) over its corpus:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      TARGET: prototxt_net, caffemodel, ...
#
# Each target starts from the committed seeds (tests/fuzz/corpus/<target>) and
# grows a working corpus in the build folder. A finding (crash, sanitizer
# report, timeout, allocation over the limit) is written to
# <build>/findings/<target>/ and makes the script fail; fix it, then commit the
# input under tests/fuzz/corpus/<target>/ so ctest replays it forever. The
# last line per target (executions, coverage) goes to <build>/fuzz_summary.txt.
# FUZZ_JOBS=N runs N processes per target (libFuzzer -fork), for long runs;
# FUZZ_PARALLEL=N runs N targets at once (default: cores / FUZZ_JOBS).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
shift || true
build="${DLCAFFE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${FUZZ_JOBS:-1}"

bash "$root/scripts/install_deps.sh"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# OSS-Fuzz's flags: -O1 and line tables only. A finding's stack still has
# files and lines, and the build takes far less than at -O2 with full debug
# information. FUZZ_OPTIMIZATION=-O0 halves the build again but runs some
# targets 10-30x slower (onnx_import, solverstate): not for CI's short runs.
opt="${FUZZ_OPTIMIZATION:--O1}"
CXX=clang++ CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -fno-omit-frame-pointer -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -fno-omit-frame-pointer -gline-tables-only -DNDEBUG" \
  -DDLCAFFE_FUZZ=ON -DDLCAFFE_SANITIZE=address,undefined -DDLCAFFE_BUILD_TESTS=OFF \
  "${launcher[@]}" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in "$root"/tests/fuzz/fuzz_*.cpp; do
    name="$(basename "$src" .cpp)"
    [ "$name" = fuzz_support ] || targets+=("${name#fuzz_}")
  done
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

# A JPEG header can claim 139 M pixels in 400 bytes, and OpenCV then really
# decodes 6 GB (its own limit is 2^30 pixels); the harness lowers that limit
# to 4096 x 4096 to stay inside its 2 GB allocation budget.
export OPENCV_IO_MAX_IMAGE_PIXELS=16777216
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp:${UBSAN_OPTIONS:-}"
summary="$build/fuzz_summary.txt"
: > "$summary"

# One target's run; its exit status says whether it found something.
fuzz_target() {  # target
  local target="$1"
  local work="$build/corpus/$target"
  local findings="$build/findings/$target"
  mkdir -p "$work" "$findings"
  local extra=()
  # ONNX's own node-test models (Debian's libonnx-testdata) as more seeds.
  if [ "$target" = onnx_import ] && [ -d /usr/share/libonnx-testdata/data/node ]; then
    mkdir -p "$build/onnx_node_models"
    for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
      ln -sf "$m" "$build/onnx_node_models/$(basename "$(dirname "$m")").onnx"
    done
    extra=("$build/onnx_node_models")
  fi
  local log="$build/fuzz_$target.log"
  local mark="$build/fuzz_$target.start"  # findings newer than this are this run's
  touch "$mark"
  echo "fuzz: $target for ${seconds}s (${jobs} job(s)); log $log"
  local fork=()
  if [ "$jobs" -gt 1 ]; then fork=(-fork="$jobs" -ignore_crashes=0); fi
  local status=0
  (cd "$build" && "$build/fuzz/fuzz_$target" "${fork[@]}" -max_total_time="$seconds" \
     -timeout=20 -rss_limit_mb=4096 -malloc_limit_mb=2048 -max_len=65536 \
     -artifact_prefix="$findings/" -print_final_stats=1 \
     "$work" "$root/tests/fuzz/corpus/$target" "${extra[@]}") > "$log" 2>&1 || status=$?
  local stats
  stats="$(grep -E '^#[0-9]+' "$log" | tail -1 || true)"
  echo "$target ${seconds}s jobs=$jobs: $stats" | tee -a "$summary"
  # Slow units are reported, not failures (-report_slow_units).
  if [ $status -ne 0 ] || [ -n "$(find "$findings" -type f -newer "$mark" ! -name 'slow-unit-*')" ]; then
    echo "fuzz: $target found something (exit $status): $findings, $log" >&2
    grep -v 'NEW_FUNC' "$log" | tail -60 >&2
    return 1
  fi
}

# FUZZ_PARALLEL targets at once (default: one per core, each a single
# process unless FUZZ_JOBS says more), so that CI's cores all fuzz.
parallel="${FUZZ_PARALLEL:-$(( $(nproc) / jobs > 0 ? $(nproc) / jobs : 1 ))}"
failed=0
running=0
for target in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_target "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit $failed
