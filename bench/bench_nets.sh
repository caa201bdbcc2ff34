#!/usr/bin/env bash
# The five benchmark nets (models/bench/, torchvision's architectures) timed
# with `dlcaffe bench`: forward = copy in + forward + result back; train = copy
# in + forward + backward + Adam update; mean over ITERS after WARMUP.
# With TORCH_REF set to a command that prints torch_ref.py's JSON (e.g.
# "python3 .gpu/torch_ref.py --batch 16 --tf32 0"), PyTorch runs in the same
# command and the table gets the ratios and their geometric means.
#
# With TUNE=1, `dlcaffe tune` first measures each net's GEMM products (those
# of its training net, which include the deploy net's) and stores the winners
# for this device, which the timed runs then use (DLCAFFE_TUNING_CACHE
# chooses where they are kept).
#
#   BATCH=16 ITERS=20 WARMUP=5 DLCAFFE=build/tools/dlcaffe bash bench/bench_nets.sh
#
# With ONNX_DIR set, the nets are $ONNX_DIR/<net>.onnx instead of
# models/bench/ (any torchvision name in NETS; export them at the batch you
# time, e.g. with tools/onnx/export_for_bench.py).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dlcaffe="${DLCAFFE:-build/tools/dlcaffe}"
batch="${BATCH:-16}"
iters="${ITERS:-20}"
warmup="${WARMUP:-5}"
nets="${NETS:-alexnet resnet18 resnet50 vgg16 mobilenet_v2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "device: $("$dlcaffe" device_query 2>&1 | grep -m1 'Name:' | sed 's/.*Name: //'), batch $batch"
for net in $nets; do
  if [ -n "${ONNX_DIR:-}" ]; then
    # ONNX models (e.g. written by tools/onnx/export_for_bench.py at this
    # batch): one file for both modes; train adds a softmax loss on its output.
    deploy="$ONNX_DIR/$net.onnx"
    train="$ONNX_DIR/$net.onnx"
  else
    for kind in deploy train; do
      # The nets are written for batch 16: the first dim of each input shape.
      sed "s/dim: 16\b/dim: $batch/" "models/bench/${net}_${kind}.prototxt" > "$work/${net}_${kind}.prototxt"
    done
    deploy="$work/${net}_deploy.prototxt"
    train="$work/${net}_train.prototxt"
  fi
  if [ "${TUNE:-0}" = 1 ]; then
    "$dlcaffe" tune --model="$train" 2>&1 | grep 'one call of each' >&2
  fi
  # A net that fails is reported (its error on stderr) and the others still run.
  fwd=$("$dlcaffe" bench --model="$deploy" --mode=forward \
        --iterations="$iters" --warmup="$warmup" 2> >(grep 'error' >&2) | awk '/^bench/ {print $4}') || true
  trn=$("$dlcaffe" bench --model="$train" --mode=train \
        --iterations="$iters" --warmup="$warmup" 2> >(grep 'error' >&2) | awk '/^bench/ {print $4}') || true
  [ -n "$fwd" ] && [ -n "$trn" ] || { echo "$net: failed" >&2; continue; }
  echo "$net $fwd $trn" | tee -a "$work/dlcaffe.txt"
done

if [ -n "${TORCH_REF:-}" ]; then
  $TORCH_REF --batch "$batch" --nets "$(echo $nets | tr ' ' ',')" | tail -1 > "$work/torch.json"
  python3 - "$work/dlcaffe.txt" "$work/torch.json" <<'PY'
import json, math, sys
ours = {l.split()[0]: (float(l.split()[1]), float(l.split()[2])) for l in open(sys.argv[1])}
ref = json.load(open(sys.argv[2]))["results"]
print("| net | dlcaffe fwd ms | torch fwd ms | speed ratio fwd | dlcaffe train ms | torch train ms | speed ratio train |")
print("|---|---|---|---|---|---|---|")
rf, rt = [], []
for net, (f, t) in ours.items():
    r = ref[net]
    tf = r.get("forward_ms", r.get("fwd_ms", r.get("forward")))
    tt = r.get("train_ms", r.get("train"))
    rf.append(tf / f); rt.append(tt / t)
    print(f"| {net} | {f:.2f} | {tf:.2f} | {tf / f:.2f} | {t:.2f} | {tt:.2f} | {tt / t:.2f} |")
g = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"| geometric mean | | | {g(rf):.2f} | | | {g(rt):.2f} |")
PY
fi
