#!/usr/bin/env bash
# The GPU check: the whole test suite and the 19 torchvision nets (forward
# and backward, twice) on a GPU host's OpenCL device, with every switch at
# its default. CI runs on PoCL, whose fresh memory is zero and whose kernels
# are CPU-shaped: only a GPU shows what the GPU-shaped kernels do. Every
# change to kernels, layers, fusions, solvers or memory handling runs it
# before it is closed (docs/gpu-check.md has the last result).
#
# Two halves, because the GPU host has no compiler and no dlcaffe packages:
#
#   here:      bash scripts/gpu_check.sh pack
#              builds (Release), packs every tool and test program with
#              their libraries into .gpu/check.tar.xz (../shared/gpu/bundle.sh)
#              and copies the MNIST files into .gpu/mnist (.gpu is ignored).
#   GPU host:  bash scripts/gpu_check.sh run [tests] [python] [nets] [transformers]
#              through the device tool, from the project's root, with .gpu
#              carried: `run` with no part runs the first three.
#   python:    bash scripts/gpu_check.sh pack-python here, then
#              `bash scripts/gpu_check.sh run python` there with .gpu-python
#              carried (alone: both bundles pass the tool's 64 MiB): the
#              device-driving pytest files under Debian's interpreter. Results and logs
#              go to $OUT (else ./gpu_check_out): summary.txt, tests.log,
#              nets_1.log, nets_2.log (nets_1_float16.log, ... for NET_DTYPES),
#              transformers_1.log, transformers_2.log.
#              Exit status 0 only when everything passed.
#
# `transformers` exports the transformer models of
# tools/onnx/make_transformer_tests.py with the host's PyTorch (today's), in
# each exporter and opset of TX_SPECS (default "torchscript:17 dynamo:18
# dynamo:20"; TX_MODELS picks models, default the small ones plus the full
# vit_b_16 and swin_t), and the Hugging Face models of
# tools/onnx/make_hf_tests.py (HF_MODELS, default all six, with
# torch.onnx.export's defaults and optimize=False), and runs them twice like
# the nets.
#
# The test programs run as ctest runs them (tests/CMakeLists.txt: with
# DLCAFFE_POISON=1); the nets with every switch at its default.
#
# Variables for `run`: NETS (comma list, default all 19), NET_RUNS (2),
# NET_ARGS (extra make_torchvision_tests.py arguments, e.g. --small),
# NET_MAKE_JOBS (generator processes at once; see make_nets),
# NET_DTYPES (storage types to run the nets in, default float32; e.g.
# float16,bfloat16: bounds from PyTorch's CUDA autocast, docs/gpu-check.md
# says what fits in one call), NET_MAKE_DTYPES, NET_REUSE, NET_GPUS (see run_nets),
# TEST_JOBS (test programs at a time, 4), TEST_TIMEOUT (seconds a program
# may take, 900), TEST_FILTER (a regex over the programs' names, default
# all), PARALLEL=1 (on a host with several GPUs: each part at once on a GPU
# of its own, DLCAFFE_DEVICE=0, 1, ... in the order given; each part's
# results in $OUT/PART/, their summaries joined in $OUT/summary.txt; the
# nets' generator then shares the CPUs with the others and may not finish
# in one 10-minute call: give `nets` a call of its own).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-}"
shift || true

pack() {
  bash scripts/build.sh
  local build="${DLCAFFE_BUILD_DIR:-$root/build}"
  mkdir -p .gpu/mnist
  # Every program; bundle.sh adds the libraries they link (libdlcaffe too).
  local programs=()
  for p in "$build"/tools/* "$build"/tests/test_* "$build"/examples/*/*; do
    [ -f "$p" ] && [ -x "$p" ] && programs+=("$p")
  done
  bash "$root/../shared/gpu/bundle.sh" .gpu/check.tar.xz "${programs[@]}"
  git -C "$root" describe --always --dirty > .gpu/check_commit.txt
  # Where each program lies in the build tree (the bundle keeps names only).
  for p in "${programs[@]}"; do echo "${p#"$build"/}"; done > .gpu/check_paths.txt
  cp "$root"/../shared/data/mnist/*.gz .gpu/mnist/
  # ONNX's node tests (Debian's libonnx-testdata) for test_onnx_conformance.
  tar -C / -cJf .gpu/onnx_node.tar.xz usr/share/libonnx-testdata/data/node
  # The onnx 1.17 wheel's node tests (opsets up to 22) for test_onnx_node_tests.
  bash scripts/onnx_node_tests.sh --fetch > /dev/null
  tar -C "${XDG_CACHE_HOME:-$HOME/.cache}/dlcaffe" -cJf .gpu/onnx_node_1.17.tar.xz onnx-1.17.0
  du -sh .gpu
}

# The Python half, on its own (with the programs' bundle both would pass the
# device tool's 64 MiB): the GPU host's python3 is another version than the
# Debian one the extension is built for, so Debian's interpreter goes along,
# with its standard library, numpy, protobuf and pytest. Into .gpu-python.
pack_python() {
  bash scripts/build.sh
  local build="${DLCAFFE_BUILD_DIR:-$root/build}" dir=.gpu-python
  local python=python3.11 site=/usr/lib/python3/dist-packages
  rm -rf "$dir" && mkdir -p "$dir"
  bash "$root/../shared/gpu/bundle.sh" "$dir/bundle.tar.xz" "/usr/bin/$python" \
    "$build"/python/dlcaffe/_dlcaffe*.so $(find "$site/numpy" -name '*.so')
  tar -C /usr/lib --exclude=__pycache__ --exclude="$python/test" --exclude="$python/idlelib" \
    --exclude="$python/tkinter" --exclude="$python/ensurepip" --exclude="$python/lib2to3" \
    -cJf "$dir/stdlib.tar.xz" "$python"
  tar -C "$site" --exclude=__pycache__ --exclude='*.so' -cJf "$dir/site.tar.xz" \
    numpy google/protobuf pytest _pytest pluggy iniconfig py py.py attr attrs packaging
  tar -C "$build" --exclude=__pycache__ -cJf "$dir/package.tar.xz" python/dlcaffe python/caffe
  echo "$python" > "$dir/python.txt"
  (cd "$site" && find numpy -name '*.so') > "$dir/numpy_so.txt"
  git -C "$root" describe --always --dirty > "$dir/commit.txt"
  du -sh "$dir"
}

# The programs' layout that the tests expect: $build/tools/X and
# $build/tests/test_Y (BuildDir() in tests/util), all from the bundle's bin.
unpack() {
  rm -rf /tmp/gpu && tar -C /tmp -xJf .gpu/check.tar.xz
  # env.sh is written for an interactive shell (its probes may fail).
  set +eu +o pipefail
  # shellcheck disable=SC1091
  source /tmp/gpu/env.sh
  set -eu -o pipefail
  build=/tmp/gpu/build
  while read -r path; do
    mkdir -p "$build/$(dirname "$path")"
    ln -sf "/tmp/gpu/bin/$(basename "$path")" "$build/$path"
  done < .gpu/check_paths.txt
  export DLCAFFE_BUILD_DIR="$build" DLCAFFE_SOURCE_DIR="$root"
  # Debian's interpreter (torch 1.13) is not there: the host's python3 has
  # today's torch, onnx and torchvision.
  export DLCAFFE_PYTHON="${DLCAFFE_PYTHON:-$(command -v python3)}"
  MNIST_DIR="$root/.gpu/mnist" bash data/mnist/get_mnist.sh 2>&1 | tail -n 1
  # What the tests find beside a checkout: ../shared's MNIST, and Debian's
  # ONNX node tests.
  if [ ! -e "$root/../shared/data/mnist" ]; then
    mkdir -p "$root/../shared/data" && ln -s "$root/.gpu/mnist" "$root/../shared/data/mnist"
  fi
  [ -d /usr/share/libonnx-testdata/data/node ] || tar -C / -xJf .gpu/onnx_node.tar.xz
  mkdir -p /tmp/gpu/cache && tar -C /tmp/gpu/cache -xJf .gpu/onnx_node_1.17.tar.xz
  export DLCAFFE_ONNX_NODE_TESTS=/tmp/gpu/cache/onnx-1.17.0
}

# Programs that test the development machine's tooling, not the device: the
# installed package (a compiler and the build tree) and Graphviz's drawings.
host_only='^(test_installed_package|test_draw_net)$'


run_tests() {
  local list=/tmp/gpu/tests.list
  ls "$build/tests" | grep -E "${TEST_FILTER:-.}" | grep -vE "$host_only" > "$list"
  echo "tests: $(wc -l < "$list") programs, ${TEST_JOBS:-4} at a time, DLCAFFE_POISON=1" \
       "(not run: $(ls "$build/tests" | grep -E "$host_only" | tr '\n' ' ')- they test the" \
       "development machine's tools)" | tee -a "$summary"
  export TEST_TIMEOUT="${TEST_TIMEOUT:-900}" DLCAFFE_POISON=1
  mkdir -p /tmp/gpu/test_logs
  # One program per job; a program's log is kept whole. Each result also
  # lands in $out/test_results.txt as it comes, so a call cut off by the
  # device tool's time limit still says which programs passed.
  xargs -P "${TEST_JOBS:-4}" -I{} bash -c \
    'start=$(date +%s); if timeout "$TEST_TIMEOUT" "$0/tests/{}" > /tmp/gpu/test_logs/{}.log 2>&1; then r=PASS; else r="FAIL($?)"; fi; echo "$r {} $(( $(date +%s) - start ))s"' \
    "$build" < "$list" | tee /tmp/gpu/test_results "$out/test_results.txt" | sed 's/^/  /'
  local failed
  failed=$(grep -c '^FAIL' /tmp/gpu/test_results || true)
  echo "tests: $(grep -c '^PASS' /tmp/gpu/test_results) passed, $failed failed" | tee -a "$summary"
  grep '^FAIL' /tmp/gpu/test_results | sed 's/^/  /' | tee -a "$summary" || true
  for t in $(grep '^FAIL' /tmp/gpu/test_results | awk '{print $2}'); do
    echo "===== $t"
    # The failing program's log without glog's info lines (its last 300).
    grep -vE '^I[0-9]{8} ' "/tmp/gpu/test_logs/$t.log" | tail -n 300
  done >> "$out/tests.log"
  unset DLCAFFE_POISON
  [ "$failed" = 0 ]
}

# The Python tests that drive the device (nets, solvers, Python layers and
# the arrays' sync), under poison, with Debian's interpreter and the
# extension from .gpu-python (pack-python); python.log.
run_python() {
  local top=/tmp/gpu-python python
  python="$(cat .gpu-python/python.txt)"
  rm -rf "$top" && mkdir -p "$top/home/lib" "$top/site"
  tar -C "$top" -xJf .gpu-python/bundle.tar.xz
  tar -C "$top/home/lib" -xJf .gpu-python/stdlib.tar.xz
  tar -C "$top/site" -xJf .gpu-python/site.tar.xz
  tar -C "$top" -xJf .gpu-python/package.tar.xz
  # The compiled parts bundle.sh put in lib/ go back beside their modules.
  while read -r so; do cp "$top/gpu/lib/$(basename "$so")" "$top/site/$so"; done < .gpu-python/numpy_so.txt
  cp "$top"/gpu/lib/_dlcaffe*.so "$top/python/dlcaffe/"
  local files="tests/python/test_blob_sync.py tests/python/test_net.py tests/python/test_solver.py tests/python/test_python_layer.py"
  if (set +eu; source "$top/gpu/env.sh"
      PYTHONHOME="$top/home" PYTHONPATH="$top/python:$top/site:$root/tests/python" \
        DLCAFFE_POISON=1 "$top/gpu/bin/$python" -m pytest -q -p no:cacheprovider $files) \
      > "$out/python.log" 2>&1; then
    echo "python ($python, built at $(cat .gpu-python/commit.txt)): $(tail -n 1 "$out/python.log")" | tee -a "$summary"
  else
    echo "python ($python): FAILED: $(tail -n 1 "$out/python.log")" | tee -a "$summary"
    grep -E '^(FAILED|ERROR|E )' "$out/python.log" | head -n 40 | sed 's/^/  /' | tee -a "$summary"
    return 1
  fi
}

# NET_DTYPES: the storage types the runner runs the nets in (float32,
# float16, bfloat16; default float32); NET_MAKE_DTYPES: those whose bounds
# the generator measures (PyTorch autocast on the host's GPU; default
# NET_DTYPES; float32's always); NET_REUSE=1: keep the tests made by an
# earlier call on the same machine when they were made for the same NETS
# and NET_ARGS with bounds for every type of NET_DTYPES (made.txt says);
# NET_GPUS (a comma list of device indices; a host with several GPUs): the
# types dealt to those GPUs in turn, after the tests are made; the GPUs run
# at once, each its types one after another.
run_nets() {
  # Outside /tmp/gpu, which every `run` unpacks afresh: NET_REUSE's tests
  # must outlive it.
  local dir=/tmp/gpu-nets/torchvision nets="${NETS:-}" dtypes="${NET_DTYPES:-float32}" dtype
  local make="${NET_MAKE_DTYPES:-$dtypes}"
  local stamp="nets=${nets:-all} args=${NET_ARGS:-}" reuse=0
  for dtype in ${make//,/ } ${dtypes//,/ }; do
    case "$dtype" in
      float32|float16|bfloat16) ;;
      *) echo "nets: unknown type '$dtype' in NET_DTYPES/NET_MAKE_DTYPES (float32, float16, bfloat16)" | tee -a "$summary"; return 1 ;;
    esac
  done
  if [ "${NET_REUSE:-0}" = 1 ] && [ -f "$dir/made.txt" ] && [ "$(sed -n 1p "$dir/made.txt")" = "$stamp" ]; then
    reuse=1
    for dtype in ${dtypes//,/ }; do
      [ "$dtype" = float32 ] || grep -qE "^dtypes=(.*,)?$dtype(,|\$)" "$dir/made.txt" || reuse=0
    done
  fi
  local start=$SECONDS
  if [ $reuse = 1 ]; then
    echo "nets: reusing the tests made earlier ($(sed -n 2,3p "$dir/made.txt" | tr '\n' ' '))" | tee -a "$summary"
  else
    for dtype in ${dtypes//,/ }; do
      case ",$make," in *",$dtype,"*) ;; *) [ "$dtype" = float32 ] ||
        { echo "nets: $dtype runs but NET_MAKE_DTYPES ($make) does not measure its bounds" | tee -a "$summary"; return 1; } ;;
      esac
    done
    rm -rf "$dir" && mkdir -p "$(dirname "$dir")"
    make_nets "$dir" "$nets" "float32,$make" ||
      { echo "nets: generating the tests failed (nets_made.log)" | tee -a "$summary"; return 1; }
    local torch
    torch="$("$DLCAFFE_PYTHON" -c 'import torch; print("torch", torch.__version__)')"
    printf '%s\ndtypes=%s\n%s\n' "$stamp" "$make" "$torch" > "$dir/made.txt"
    local sixteen=",$make,"
    sixteen="${sixteen//,float32,/,}" && sixteen="${sixteen#,}" && sixteen="${sixteen%,}"
    echo "nets: made in $((SECONDS - start)) s by $torch, bounds for float32${sixteen:+,$sixteen}" | tee -a "$summary"
    # A 16-bit type whose autocast the host lacks, or a net without bounds in one.
    grep -E 'skipped|NO BOUNDS' "$out/nets_made.log" | sed 's/^ */  /' | tee -a "$summary" || true
  fi
  local ok=0 run dtype
  if [ -n "${NET_GPUS:-}" ]; then
    # The types dealt to the GPUs in turn; each GPU runs its types one after
    # another, the GPUs at once.
    local gpus=(${NET_GPUS//,/ }) types=(${dtypes//,/ }) pids=() g
    if [ ${#gpus[@]} = 0 ]; then
      echo "nets: NET_GPUS='$NET_GPUS' names no device index" | tee -a "$summary"
      return 1
    fi
    for g in "${!gpus[@]}"; do
      (export DLCAFFE_DEVICE="${gpus[$g]}"
       failed=0
       for ((i = g; i < ${#types[@]}; i += ${#gpus[@]})); do
         for run in $(seq 1 "${NET_RUNS:-2}"); do run_nets_once "$dir" "${types[$i]}" "$run" || failed=1; done
       done
       exit $failed) > "$out/nets_gpu${gpus[$g]}_summary.txt" 2>&1 &
      pids+=($!)
    done
    for g in "${!gpus[@]}"; do
      wait "${pids[$g]}" || ok=1
      sed "s/^nets /nets (DLCAFFE_DEVICE=${gpus[$g]}) /" "$out/nets_gpu${gpus[$g]}_summary.txt" |
        tee -a "$summary"
    done
    return $ok
  fi
  for run in $(seq 1 "${NET_RUNS:-2}"); do
    for dtype in ${dtypes//,/ }; do
      if ! run_nets_once "$dir" "$dtype" "$run" | tee -a "$summary"; then ok=1; fi
    done
  done
  return $ok
}

# The generator over the nets $2 (all where empty) into $1 with bounds for
# the types $3, as NET_MAKE_JOBS processes at once (default: one per 8 CPUs,
# at most 8), each over every NET_MAKE_JOBS-th net with its share of the
# CPUs: the float64 references scale poorly over many threads (one process
# on 64 CPUs took over 9 minutes for the 19 nets, eighth session). Each net
# writes a directory of its own. Their logs joined in $out/nets_made.log.
make_nets() {
  local dir=$1 nets=$2 dtypes=$3 jobs list j pids=() failed=0
  [ -n "$nets" ] || nets="$("$DLCAFFE_PYTHON" -c 'import sys; sys.path.insert(0, "tools/onnx")
import make_torchvision_tests as m; print(",".join(m.NETS))')"
  list=(${nets//,/ })
  jobs="${NET_MAKE_JOBS:-$(( $(nproc) / 8 ))}"
  [ "$jobs" -ge 1 ] || jobs=1
  [ "$jobs" -le 8 ] || jobs=8
  [ "$jobs" -le ${#list[@]} ] || jobs=${#list[@]}
  for ((j = 0; j < jobs; ++j)); do
    local mine=() i
    for ((i = j; i < ${#list[@]}; i += jobs)); do mine+=("${list[$i]}"); done
    local joined="${mine[*]}"
    "$DLCAFFE_PYTHON" tools/onnx/make_torchvision_tests.py "$dir" \
      --threads $(( $(nproc) / jobs > 0 ? $(nproc) / jobs : 1 )) --nets "${joined// /,}" \
      --dtypes "$dtypes" ${NET_ARGS:-} > "$out/nets_made_$j.log" 2>&1 &
    pids+=($!)
  done
  for j in "${!pids[@]}"; do wait "${pids[$j]}" || failed=1; done
  for ((j = 0; j < jobs; ++j)); do cat "$out/nets_made_$j.log" && rm -f "$out/nets_made_$j.log"; done \
    > "$out/nets_made.log"
  return $failed
}

# One run of the runner over the tests in $1 in storage type $2 (run $3):
# its summary line and failures on stdout, its log in $out; 1 on failures.
run_nets_once() {
  local dir=$1 dtype=$2 run=$3 storage log start ok=0
  case "$dtype" in
    float32) storage=FLOAT log="$out/nets_$run.log" ;;
    *) storage="${dtype^^}" log="$out/nets_${run}_$dtype.log" ;;
  esac
  start=$SECONDS
  "$build/tools/onnx_test_runner" --verbose --storage "$storage" "$dir" > "$log" 2>&1 || ok=1
  echo "nets $dtype, run $run ($((SECONDS - start)) s): $(grep -E '^[0-9]+ passed' "$log" | tail -n 1)"
  grep -E '^(FAIL|SKIP)' "$log" | sed 's/^/  /' || true
  return $ok
}

run_transformers() {
  local dir=/tmp/gpu/transformers models="${TX_MODELS:-vit_mini,swin_mini,encoder_postnorm,encoder_prenorm,gpt_lm,llama_block,vit_b_16,swin_t}"
  rm -rf "$dir"
  local start=$SECONDS spec made=0
  : > "$out/transformers_made.log"
  for spec in ${TX_SPECS:-torchscript:17 dynamo:18 dynamo:20}; do
    "$DLCAFFE_PYTHON" tools/onnx/make_transformer_tests.py "$dir" --exporter "${spec%%:*}" \
      --opset "${spec##*:}" --models "$models" >> "$out/transformers_made.log" 2>&1 || made=1
  done
  # Hugging Face's models as torch.onnx.export writes them (defaults and
  # optimize=False; tools/onnx/make_hf_tests.py, needs transformers).
  "$DLCAFFE_PYTHON" tools/onnx/make_hf_tests.py "$dir" --models "${HF_MODELS:-gpt2,llama,qwen2,bert,distilbert,vit}" \
    >> "$out/transformers_made.log" 2>&1 || made=1
  echo "transformers: made in $((SECONDS - start)) s by $("$DLCAFFE_PYTHON" -c 'import torch; print("torch", torch.__version__)')$([ $made = 0 ] || echo ', SOME FAILED TO EXPORT (transformers_made.log)')" | tee -a "$summary"
  local ok=$made
  for run in 1 2; do
    start=$SECONDS
    "$build/tools/onnx_test_runner" --verbose "$dir" > "$out/transformers_$run.log" 2>&1 || ok=1
    echo "transformers, run $run ($((SECONDS - start)) s): $(grep -E '^[0-9]+ passed' "$out/transformers_$run.log" | tail -n 1)" | tee -a "$summary"
    grep -E '^(FAIL|SKIP)' "$out/transformers_$run.log" | sed 's/^/  /' | tee -a "$summary" || true
  done
  return $ok
}

case "$mode" in
  pack) pack ;;
  pack-python) pack_python ;;
  run)
    out="${OUT:-$root/gpu_check_out}"
    mkdir -p "$out"
    summary="$out/summary.txt"
    : > "$summary"
    parts=("$@")
    [ ${#parts[@]} -gt 0 ] || parts=(tests nets transformers)
    # The programs' bundle, unless only the Python half runs.
    if [ "${parts[*]}" != python ]; then
      unpack
      {
        echo "gpu_check of the programs built at $(cat .gpu/check_commit.txt), $(date -u +%F)"
        "$build/tools/dlcaffe" device_query 2>&1 | grep -E 'Name|Driver|Version' | head -n 4 || true
      } | tee -a "$summary"
    fi
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
      env | grep -E '^DLCAFFE_' | grep -vE 'BUILD_DIR|SOURCE_DIR|PYTHON' || echo "switches: all at their defaults"
    } | tee -a "$summary"
    run_part() {
      case "$1" in
        tests) run_tests ;;
        nets) run_nets ;;
        transformers) run_transformers ;;
        python) run_python ;;
      esac
    }
    for part in "${parts[@]}"; do
      case "$part" in
        tests|nets|transformers|python) ;;
        *) echo "gpu_check: unknown part '$part' (tests, nets, transformers, python)" >&2; exit 2 ;;
      esac
    done
    status=0
    if [ "${PARALLEL:-0}" = 1 ]; then
      pids=()
      for i in "${!parts[@]}"; do
        part="${parts[$i]}"
        mkdir -p "$out/$part"
        (export DLCAFFE_DEVICE="$i"; out="$out/$part"; summary="$out/summary.txt"
         echo "$part on DLCAFFE_DEVICE=$i" > "$summary"; run_part "$part" || exit 1) \
          > "$out/$part/console.log" 2>&1 &
        pids+=($!)
      done
      for i in "${!parts[@]}"; do
        wait "${pids[$i]}" || status=1
        cat "$out/${parts[$i]}/summary.txt" | tee -a "$summary"
      done
    else
      for part in "${parts[@]}"; do run_part "$part" || status=1; done
    fi
    echo "gpu_check: $([ $status = 0 ] && echo CLEAN || echo FAILURES)" | tee -a "$summary"
    exit $status
    ;;
  *) sed -n 2,35p "$0"; exit 2 ;;
esac
