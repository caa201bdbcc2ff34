#!/usr/bin/env bash
# Training, end to end, against PyTorch: torchvision's resnet18 (BatchNorm,
# one input channel, 10 classes) from the same initial weights, on the same
# MNIST batches in the same order, with the same SGD; dlcaffe trains the
# ONNX-imported net from the command line (`dlcaffe train`), PyTorch its own
# (bench/train_curve_ref.py, which also runs it in float64: the exact
# curve). Prints the curves at every 25th step and each float32 run's
# distance from the exact one, and fails when dlcaffe's is more than twice
# PyTorch's (or TOLERANCE, if that is larger): training from scratch is
# chaotic, so after some steps float32 rounding alone moves any run away
# from the exact curve, and the fair yardstick is how far PyTorch's moves.
#
#   bench/train_curve.sh
#
# Variables: DLCAFFE (default build/tools/dlcaffe; convert_onnx beside it),
# PYTHON (an interpreter with torch and torchvision; default python3),
# MNIST_DIR (the four IDX files, default ../shared/data/mnist), TRAIN_LMDB
# (default examples/mnist/mnist_train_lmdb), STEPS (300), BATCH (32), LR
# (0.01), TORCH_DEVICE (cuda when there is one), OUT_DIR (a new temporary
# folder), TOLERANCE (0.02, see above).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dlcaffe="${DLCAFFE:-build/tools/dlcaffe}"
convert="$(dirname "$dlcaffe")/convert_onnx"
python="${PYTHON:-python3}"
mnist="${MNIST_DIR:-../shared/data/mnist}"
lmdb="${TRAIN_LMDB:-examples/mnist/mnist_train_lmdb}"
steps="${STEPS:-300}" batch="${BATCH:-32}" lr="${LR:-0.01}"
out="${OUT_DIR:-$(mktemp -d)}"
mkdir -p "$out"
[ -d "$lmdb" ] || { echo "train_curve.sh: $lmdb is missing: run data/mnist/get_mnist.sh" >&2; exit 1; }

"$python" bench/train_curve_ref.py --mnist "$mnist" --out "$out" --steps "$steps" \
  --batch "$batch" --lr "$lr" ${TORCH_DEVICE:+--device "$TORCH_DEVICE"}
"$convert" --training "$out/resnet18_mnist.onnx" "$out/imported.prototxt" "$out/initial.caffemodel"

# The imported layers, fed by a Data layer (file order, scale 1/256) in place
# of the Input layer, and closed by the softmax loss.
"$python" - "$out/imported.prototxt" "$out/train.prototxt" "$lmdb" "$batch" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# The Input layer: the layer { ... } block whose type is "Input".
blocks, depth, start = [], 0, None
for i, ch in enumerate(text):
    if text.startswith("layer {", i) and depth == 0:
        start = i
    if ch == "{":
        depth += 1
    elif ch == "}":
        depth -= 1
        if depth == 0 and start is not None:
            blocks.append((start, i + 1))
            start = None
inputs = [b for b in blocks if re.search(r'type:\s*"Input"', text[b[0]:b[1]])]
assert len(inputs) == 1, "expected one Input layer"
lo, hi = inputs[0]
data = ('layer {\n  name: "mnist"\n  type: "Data"\n  top: "data"\n  top: "label"\n'
        '  transform_param { scale: 0.00390625 }\n'
        f'  data_param {{ source: "{sys.argv[3]}" batch_size: {sys.argv[4]} backend: LMDB }}\n}}\n')
loss = ('layer {\n  name: "loss"\n  type: "SoftmaxWithLoss"\n  bottom: "logits"\n'
        '  bottom: "label"\n  top: "loss"\n}\n')
open(sys.argv[2], "w").write(text[:lo] + data + text[hi:] + loss)
PY

cat > "$out/solver.prototxt" <<EOF
net: "$out/train.prototxt"
type: "SGD"
base_lr: $lr
momentum: 0.9
weight_decay: 0
lr_policy: "fixed"
max_iter: $steps
display: 1
random_seed: 1701
snapshot_after_train: false
EOF
"$dlcaffe" train --solver="$out/solver.prototxt" --weights="$out/initial.caffemodel" \
  > "$out/dlcaffe_train.log" 2>&1 || { tail -n 20 "$out/dlcaffe_train.log"; exit 1; }
# "Iteration N (... iter/s, ...), loss = X": the loss of step N (display 1).
sed -n 's/.*Iteration \([0-9]*\) ([^)]*), loss = \([-0-9.e+naif]*\).*/\1 \2/p' \
  "$out/dlcaffe_train.log" > "$out/dlcaffe_loss.txt"

"$python" bench/compare_curves.py "$out/torch64_loss.txt" "$out/torch_loss.txt" \
  "$out/dlcaffe_loss.txt" "${TOLERANCE:-0.02}"
