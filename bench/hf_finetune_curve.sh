#!/usr/bin/env bash
# Fine-tuning an imported Hugging Face model, end to end, against PyTorch:
# BertForSequenceClassification (tests/import/hf_models/hf_finetune_bert,
# exported on the GPU host by tools/onnx/make_hf_tests.py --finetune with
# torch.onnx.export's defaults, so the import recovers the parameters the
# optimizer folded) from the same weights on the same 200 batches of 8 x 16
# token ids, attention masks, token types and labels, with the same SGD (lr
# 0.02, momentum 0.9). dlcaffe trains the import from the command line
# (`dlcaffe train`, an HDF5Data layer feeding the batches in order, the
# softmax loss over the logits); PyTorch's float32 and float64 curves come
# with the test data. Fails when dlcaffe's curve is further from the float64
# one than twice PyTorch's float32 curve is (or TOLERANCE), as
# bench/train_curve.sh judges resnet18's.
#
#   bench/hf_finetune_curve.sh
#
# Variables: DLCAFFE (default build/tools/dlcaffe; convert_onnx beside it),
# PYTHON (an interpreter with numpy and h5py; default /usr/bin/python3),
# DATA_DIR (default tests/import/hf_models/hf_finetune_bert), MODEL (model.onnx
# there), OUT_DIR (a new temporary folder), TOLERANCE (0.02).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dlcaffe="${DLCAFFE:-build/tools/dlcaffe}"
convert="$(dirname "$dlcaffe")/convert_onnx"
python="${PYTHON:-/usr/bin/python3}"
data="${DATA_DIR:-tests/import/hf_models/hf_finetune_bert}"
model="$data/${MODEL:-model.onnx}"
out="${OUT_DIR:-$(mktemp -d)}"
mkdir -p "$out"

# The batches as one HDF5 file (rows in step order), PyTorch's curves as
# "step loss" lines, the solver's settings from curve.json.
"$python" - "$data" "$out" <<'PY'
import json, sys
import h5py
import numpy as np
data, out = sys.argv[1], sys.argv[2]
b = np.load(f"{data}/batches.npz")
steps, batch = b["labels"].shape
with h5py.File(f"{out}/batches.h5", "w") as f:
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        f[name] = b[name].reshape(steps * batch, -1).astype(np.float32)
    f["label"] = b["labels"].reshape(steps * batch).astype(np.float32)
open(f"{out}/batches.txt", "w").write(f"{out}/batches.h5\n")
c = json.load(open(f"{data}/curve.json"))
for dtype, name in (("float64", "torch64"), ("float32", "torch")):
    open(f"{out}/{name}_loss.txt", "w").write("".join(f"{s} {v!r}\n" for s, v in enumerate(c[dtype])))
open(f"{out}/settings.sh", "w").write(
    f"steps={c['steps']} batch={c['batch']} lr={c['lr']} momentum={c['momentum']}\n")
PY
source "$out/settings.sh"
"$convert" --training "$model" "$out/imported.prototxt" "$out/initial.caffemodel" > "$out/convert.log" 2>&1 ||
  { cat "$out/convert.log"; exit 1; }

# The imported layers, fed by HDF5Data (the three inputs and the label, in
# order) in place of the Input layer, and closed by the softmax loss.
"$python" - "$out/imported.prototxt" "$out/train.prototxt" "$out/batches.txt" "$batch" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
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
tops = re.findall(r'top:\s*"([^"]+)"', text[lo:hi])
assert tops == ["input_ids", "attention_mask", "token_type_ids"], tops
data = ('layer {\n  name: "batches"\n  type: "HDF5Data"\n'
        + "".join(f'  top: "{t}"\n' for t in tops + ["label"])
        + f'  hdf5_data_param {{ source: "{sys.argv[3]}" batch_size: {sys.argv[4]} shuffle: false }}\n}}\n')
loss = ('layer {\n  name: "loss"\n  type: "SoftmaxWithLoss"\n  bottom: "logits"\n'
        '  bottom: "label"\n  top: "loss"\n}\n')
open(sys.argv[2], "w").write(text[:lo] + data + text[hi:] + loss)
PY

cat > "$out/solver.prototxt" <<EOF
net: "$out/train.prototxt"
type: "SGD"
base_lr: $lr
momentum: $momentum
weight_decay: 0
lr_policy: "fixed"
max_iter: $steps
display: 1
random_seed: 1701
snapshot_after_train: false
EOF
"$dlcaffe" train --solver="$out/solver.prototxt" --weights="$out/initial.caffemodel" \
  > "$out/dlcaffe_train.log" 2>&1 || { tail -n 20 "$out/dlcaffe_train.log"; exit 1; }
recovered=$(grep -cE "parameter .*(transposed|rows|tied|broadcast)" "$out/convert.log" || true)
echo "import: $recovered parameters recovered from the exporter's folds (convert.log)"
sed -n 's/.*Iteration \([0-9]*\) ([^)]*), loss = \([-0-9.e+naif]*\).*/\1 \2/p' \
  "$out/dlcaffe_train.log" > "$out/dlcaffe_loss.txt"
"$python" bench/compare_curves.py "$out/torch64_loss.txt" "$out/torch_loss.txt" \
  "$out/dlcaffe_loss.txt" "${TOLERANCE:-0.02}"
