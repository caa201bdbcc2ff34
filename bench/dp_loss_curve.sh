#!/usr/bin/env bash
# Data-parallel correctness on real data: LeNet (models/lenet, its solver's
# learning-rate rule) trained for ITERS iterations of SGD at a total batch of 2 x BATCH, by one replica of
# 2 x BATCH, by two replicas of BATCH in one process (--device=DEVICES), and
# by two MPI ranks of BATCH. The test net runs every TEST_EVERY iterations
# on TEST_ITER x 100 test images; its loss depends on the weights alone, so
# the three curves must agree up to float rounding (docs/data-parallel.md:
# the replicas together read what one replica reads, and average the same
# gradients). Prints the curves and each run's largest relative difference
# from the one-replica curve.
#
#   bash bench/dp_loss_curve.sh                      # MNIST LMDBs of the main job
#   DLCAFFE=/tmp/gpu/bin/dlcaffe DEVICES=0,1 TRAIN_LMDB=... TEST_LMDB=... bash bench/dp_loss_curve.sh
#
# Settings: DLCAFFE (build/tools/dlcaffe), TRAIN_LMDB and TEST_LMDB
# (examples/mnist/mnist_{train,test}_lmdb), BATCH per replica (64), ITERS
# (200), TEST_EVERY (20), TEST_ITER (20), DEVICES for the threads run (0,0:
# both replicas on device 0; 0,1 on a host with two GPUs), MPIRUN (mpirun;
# the MPI run is skipped, with a note, without it) and MPI_DEVICE (the
# --device each rank takes; empty: the GPU of its local rank), LOG_DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dlcaffe="${DLCAFFE:-build/tools/dlcaffe}"
train_lmdb="$(realpath "${TRAIN_LMDB:-examples/mnist/mnist_train_lmdb}")"
test_lmdb="$(realpath "${TEST_LMDB:-examples/mnist/mnist_test_lmdb}")"
batch="${BATCH:-64}"
iters="${ITERS:-200}"
test_every="${TEST_EVERY:-20}"
test_iter="${TEST_ITER:-20}"
devices="${DEVICES:-0,0}"
mpirun="${MPIRUN:-mpirun}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
logs="${LOG_DIR:-$work}"
mkdir -p "$logs"
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

for b in $((2 * batch)) "$batch"; do
  # The training Data layer's batch (the first batch_size in the file) and
  # both sources.
  sed -e "s#examples/mnist/mnist_train_lmdb#$train_lmdb#; s#examples/mnist/mnist_test_lmdb#$test_lmdb#" \
      -e "0,/batch_size: 64/s//batch_size: $b/" models/lenet/lenet_train_test.prototxt > "$work/net$b.prototxt"
  # The LeNet solver's rule (rate, momentum, decay, policy), with this
  # run's net, length, test points and seed.
  {
    grep -vE '^(net|test_iter|test_interval|display|max_iter|snapshot|snapshot_prefix):' \
      models/lenet/lenet_solver.prototxt
    cat <<EOF
net: "$work/net$b.prototxt"
test_iter: $test_iter
test_interval: $test_every
test_initialization: true
display: $test_every
max_iter: $iters
snapshot: 0
snapshot_after_train: false
random_seed: 1701
EOF
  } > "$work/solver$b.prototxt"
done

run() {
  local name="$1"; shift
  if "$@" > "$logs/$name.log" 2>&1; then
    # "Test net output #1: loss = X" (LeNet's second test output).
    grep 'Test net output #1: loss = ' "$logs/$name.log" | sed 's/.*loss = \([^ ]*\).*/\1/' |
      paste -sd' ' | sed "s/^/$name /" >> "$work/curves.txt"
  else
    echo "$name: failed (exit $?): $logs/$name.log" >&2
    tail -3 "$logs/$name.log" >&2
  fi
}
: > "$work/curves.txt"
run one_replica "$dlcaffe" train --solver="$work/solver$((2 * batch)).prototxt" --device="${devices%%,*}"
run threads_2 "$dlcaffe" train --solver="$work/solver$batch.prototxt" --device="$devices"
if command -v "$mpirun" > /dev/null 2>&1; then
  run mpi_2 "$mpirun" -np 2 --bind-to none --oversubscribe "$dlcaffe" train \
    --solver="$work/solver$batch.prototxt" ${MPI_DEVICE:+--device=$MPI_DEVICE}
else
  echo "mpi: skipped: '$mpirun' not found" >&2
fi

echo "test loss every $test_every iterations (total batch $((2 * batch)); two replicas on --device=$devices):"
python3 - "$work/curves.txt" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
if not rows or rows[0][0] != "one_replica":
    sys.exit("dp_loss_curve: no one-replica curve")
base = [float(x) for x in rows[0][1:]]
for name, *values in rows:
    values = [float(x) for x in values]
    worst = max((abs(v - b) / abs(b) for v, b in zip(values, base)), default=0.0)
    note = "" if len(values) == len(base) else f" ({len(values)} of {len(base)} points)"
    print(f"{name:12s} " + " ".join(f"{v:.6g}" for v in values) +
          f"   largest relative difference {worst:.2e}{note}")
PY
