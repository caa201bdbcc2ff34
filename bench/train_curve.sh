#!/usr/bin/env bash
# Training, end to end, against PyTorch: torchvision's resnet18 (BatchNorm,
# one input channel, 10 classes) from the same initial weights, on the same
# MNIST batches in the same order, with the same SGD; dlcaffe trains the
# ONNX-imported net from the command line (`dlcaffe train`), PyTorch its own
# (bench/train_curve_ref.py). Prints both loss curves at every 25th step and
# their distance, and fails when the curves part by more than the tolerance.
#
#   bench/train_curve.sh
#
# Variables: DLCAFFE (default build/tools/dlcaffe; convert_onnx beside it),
# PYTHON (an interpreter with torch and torchvision; default python3),
# MNIST_DIR (the four IDX files, default ../shared/data/mnist), TRAIN_LMDB
# (default examples/mnist/mnist_train_lmdb), STEPS (300), BATCH (32), LR
# (0.01), TORCH_DEVICE (cuda when there is one), OUT_DIR (a new temporary
# folder), TOLERANCE (0.05: the largest |ours - PyTorch's| / PyTorch's loss
# over the mean of 10-step windows, after which float32 rounding alone has
# moved the two runs apart by a few percent at most; a wrong gradient moves
# them apart within the first steps).
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
sed -n 's/.*Iteration \([0-9]*\), loss = \([-0-9.e+naif]*\).*/\1 \2/p' "$out/dlcaffe_train.log" \
  > "$out/dlcaffe_loss.txt"

"$python" - "$out/torch_loss.txt" "$out/dlcaffe_loss.txt" "${TOLERANCE:-0.05}" <<'PY'
import math, sys
torch = dict(map(lambda l: (int(l.split()[0]), float(l.split()[1])), open(sys.argv[1])))
ours = dict(map(lambda l: (int(l.split()[0]), float(l.split()[1])), open(sys.argv[2])))
tolerance = float(sys.argv[3])
steps = sorted(torch)
missing = [s for s in steps if s not in ours]
if missing:
    sys.exit(f"train_curve.sh: dlcaffe logged no loss for {len(missing)} steps (first {missing[0]})")
print(f"{'step':>5} {'pytorch':>9} {'dlcaffe':>9} {'rel.diff':>9}")
for s in steps:
    if s % 25 == 0 or s == steps[-1]:
        print(f"{s:5d} {torch[s]:9.5f} {ours[s]:9.5f} {abs(ours[s] - torch[s]) / torch[s]:9.2%}")
# Single steps are noisy (each batch's loss); windows of 10 steps are what
# the curves are.
worst, at = 0.0, 0
for w in range(0, len(steps) - 9, 10):
    a = sum(torch[s] for s in steps[w:w + 10]) / 10
    b = sum(ours[s] for s in steps[w:w + 10]) / 10
    if not math.isfinite(b):
        worst, at = math.inf, steps[w]
        break
    if abs(b - a) / a > worst:
        worst, at = abs(b - a) / a, steps[w]
first10 = max(abs(ours[s] - torch[s]) / torch[s] for s in steps[:10])
print(f"largest relative difference of 10-step means: {worst:.2%} (steps {at}-{at + 9}); "
      f"largest single-step difference in the first 10 steps: {first10:.3%}; "
      f"tolerance {tolerance:.0%}")
sys.exit(0 if worst <= tolerance else 1)
PY
