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

"$python" - "$out/torch64_loss.txt" "$out/torch_loss.txt" "$out/dlcaffe_loss.txt" \
  "${TOLERANCE:-0.02}" <<'PY'
import math, sys
def curve(path):
    return dict((int(l.split()[0]), float(l.split()[1])) for l in open(path) if l.strip())
exact, torch, ours = curve(sys.argv[1]), curve(sys.argv[2]), curve(sys.argv[3])
floor = float(sys.argv[4])
steps = sorted(exact)
missing = [s for s in steps if s not in ours]
if missing:
    sys.exit(f"train_curve.sh: dlcaffe logged no loss for {len(missing)} steps (first {missing[0]})")
print(f"{'step':>5} {'float64':>9} {'pytorch':>9} {'dlcaffe':>9}")
for s in steps:
    if s % 25 == 0 or s == steps[-1]:
        print(f"{s:5d} {exact[s]:9.5f} {torch[s]:9.5f} {ours[s]:9.5f}")
# The curves are the means of 10-step windows (single steps are each
# batch's loss); each float32 run's distance from the exact one is the mean
# relative difference of those means.
def distance(run):
    d = []
    for w in range(0, len(steps) - 9, 10):
        a = sum(exact[s] for s in steps[w:w + 10]) / 10
        b = sum(run[s] for s in steps[w:w + 10]) / 10
        d.append(abs(b - a) / a if math.isfinite(b) else math.inf)
    return sum(d) / len(d), max(d)
ours_mean, ours_max = distance(ours)
torch_mean, torch_max = distance(torch)
first = next((s for s in steps if abs(ours[s] - exact[s]) > 1e-3 * exact[s]), None)
torch_first = next((s for s in steps if abs(torch[s] - exact[s]) > 1e-3 * exact[s]), None)
bound = max(floor, 2 * torch_mean)
print(f"distance from the float64 curve (mean / largest over 10-step means): dlcaffe "
      f"{ours_mean:.2%} / {ours_max:.2%}, PyTorch float32 {torch_mean:.2%} / {torch_max:.2%}; "
      f"first step 0.1% off: dlcaffe {first}, PyTorch {torch_first}; "
      f"bound max({floor:.0%}, 2 x PyTorch's mean) = {bound:.2%}")
sys.exit(0 if ours_mean <= bound else 1)
PY
