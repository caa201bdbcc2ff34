#!/usr/bin/env bash
# LeNet training speed on the default OpenCL device, as a benchmark (never a
# test): dlcaffe trains Caffe's LeNet on MNIST (batch 64, SGD) and reports
# iterations per second from its own log; PyTorch's CPU path trains the same
# net in the same command as the reference (if python3-torch is installed).
#
#   bash bench/lenet_speed.sh [iterations]       (default 600)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${DLCAFFE_BUILD_DIR:-$root/build}"
iters="${1:-600}"
threads="$(nproc)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/solver.prototxt" <<SOLVER
net: "models/lenet/lenet_train_test.prototxt"
test_iter: 1
test_interval: 1000000
test_initialization: false
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 100
max_iter: $iters
snapshot_after_train: false
snapshot_prefix: "$work/lenet"
SOLVER

echo "device: $("$build/tools/dlcaffe" device_query 2>&1 | awk '/Name:/ && !seen++ {sub(/.*Name: /, ""); print}')"
"$build/tools/dlcaffe" train --solver="$work/solver.prototxt" 2> "$work/log"
# Skip the first display window (kernel builds, warm-up); average the rest.
awk '/ iter\/s, / { n++; if (n > 1) { gsub(/\(/, "", $7); sum += $7; count++ } }
     END { if (count) printf "dlcaffe lenet train: %.1f iter/s (mean of %d windows of 100 iterations)\n", sum / count, count }' \
  "$work/log" | tee "$work/dlcaffe.txt"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 bench/lenet_pytorch.py --threads "$threads" | tee "$work/torch.txt"
  d=$(grep -o '[0-9.]* iter/s' "$work/dlcaffe.txt" | cut -d' ' -f1)
  t=$(grep -o '[0-9.]* iter/s' "$work/torch.txt" | cut -d' ' -f1)
  awk -v d="$d" -v t="$t" 'BEGIN { printf "ratio dlcaffe / pytorch: %.2f\n", d / t }'
else
  echo "(python3-torch not installed: no PyTorch reference)"
fi
