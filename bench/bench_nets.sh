#!/usr/bin/env bash
# The five benchmark nets (models/bench/, torchvision's architectures) timed
# with `dlcaffe bench`: forward = copy in + forward + result back; train = copy
# in + forward + backward + Adam update; mean over ITERS after WARMUP.
# With TORCH_REF set to a command that prints torch_ref.py's JSON (e.g.
# "python3 .gpu/torch_ref.py --batch 16 --tf32 0"), PyTorch runs in the same
# command and the table gets the ratios and their geometric means.
#
# With ORT_REF=1, ONNX Runtime's CPU execution provider is a second reference,
# forward only: bench/ort_env.sh installs onnxruntime from PyPI (Debian has no
# package) into ${ORT_VENV:-~/.cache/dlcaffe/ort-venv} if it is not there yet,
# and bench/ort_ref.py times the same NETS at BATCH, mean over ITERS runs
# after 3 untimed ones (torch_ref.py's method, not WARMUP), with
# ORT_THREADS intra-op threads (unset: ONNX Runtime's default, one per
# physical core). ORT_REF may instead be a command, like TORCH_REF (e.g.
# "$(bash bench/ort_env.sh) bench/ort_ref.py --threads 2 --iters 20"); it gets
# --batch, --nets and --onnx-dir appended. ORT reads $ONNX_DIR/<net>.onnx, or
# without ONNX_DIR models that ort_ref.py exports at BATCH into this script's
# temporary directory (with tools/onnx/export_for_bench.py; it also exports
# what is missing from ONNX_DIR). The table, printed when TORCH_REF or ORT_REF
# is set, then ends with two more columns, "ort fwd ms" and "speed ratio vs
# ort fwd" (ort ms / dlcaffe ms, like the torch ratios: above 1, dlcaffe is
# faster), and the ratio's geometric mean; a net that fails in ORT (reported
# on stderr) reads "failed" there and is left out of that mean. Without
# ORT_REF the output is as it was. Columns, with both references:
#   net | dlcaffe fwd ms | torch fwd ms | speed ratio fwd | dlcaffe train ms |
#   torch train ms | speed ratio train | ort fwd ms | speed ratio vs ort fwd
# (without TORCH_REF the three torch columns are left out).
#
#   BATCH=16 ITERS=20 WARMUP=5 ORT_REF=1 ORT_THREADS=2 \
#     TORCH_REF="/usr/bin/python3 bench/torch_ref.py --device cpu --threads 2" \
#     DLCAFFE=build/tools/dlcaffe bash bench/bench_nets.sh
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
    "$dlcaffe" tune --model="$train" 2>&1 | grep -E 'tuned \(|forward \+ backward pass' >&2
  fi
  # A net that fails is reported (its error on stderr) and the others still run.
  fwd=$("$dlcaffe" bench --model="$deploy" --mode=forward \
        --iterations="$iters" --warmup="$warmup" 2> >(grep 'error' >&2) | awk '/^bench .* ms\/iter/ {print $4}') || true
  trn=$("$dlcaffe" bench --model="$train" --mode=train \
        --iterations="$iters" --warmup="$warmup" 2> >(grep 'error' >&2) | awk '/^bench .* ms\/iter/ {print $4}') || true
  [ -n "$fwd" ] && [ -n "$trn" ] || { echo "$net: failed" >&2; continue; }
  echo "$net $fwd $trn" | tee -a "$work/dlcaffe.txt"
done

touch "$work/dlcaffe.txt"
torch_json=""
if [ -n "${TORCH_REF:-}" ]; then
  $TORCH_REF --batch "$batch" --nets "$(echo $nets | tr ' ' ',')" | tail -1 > "$work/torch.json"
  torch_json="$work/torch.json"
fi

ort_json=""
ort_ref="${ORT_REF:-}"
[ "$ort_ref" = 0 ] && ort_ref=""
if [ -n "$ort_ref" ]; then
  ort_json="$work/ort.json"
  : > "$ort_json"
  if [ "$ort_ref" = 1 ]; then
    if ort_py=$(bash bench/ort_env.sh); then
      ort_ref="$ort_py bench/ort_ref.py --iters $iters${ORT_THREADS:+ --threads $ORT_THREADS}"
    else
      echo "ort: onnxruntime could not be installed (bench/ort_env.sh failed)" >&2
      ort_ref=""
    fi
  fi
  if [ -n "$ort_ref" ]; then
    # Per-net failures are reported on stderr by ort_ref.py; the others run.
    $ort_ref --batch "$batch" --nets "$(echo $nets | tr ' ' ',')" \
      --onnx-dir "${ONNX_DIR:-$work/onnx}" > "$work/ort.out" || echo "ort: $ort_ref failed" >&2
    tail -1 "$work/ort.out" > "$ort_json"
  fi
fi

if [ -n "$torch_json" ] || [ -n "$ort_json" ]; then
  python3 - "$work/dlcaffe.txt" "$torch_json" "$ort_json" <<'PY'
import json, math, sys
ours = {l.split()[0]: (float(l.split()[1]), float(l.split()[2])) for l in open(sys.argv[1])}


def load(path):
    # None: that reference was not asked for; {}: it produced nothing.
    if not path:
        return None
    try:
        return json.load(open(path))["results"]
    except (ValueError, KeyError, OSError):
        return {}


torch, ort = load(sys.argv[2]), load(sys.argv[3])
fwd = lambda r: r.get("forward_ms", r.get("fwd_ms", r.get("forward")))
line = lambda cells: print("|" + "".join(f" {c} |" if c else " |" for c in cells))
head = ["net", "dlcaffe fwd ms"]
if torch is not None:
    head += ["torch fwd ms", "speed ratio fwd", "dlcaffe train ms", "torch train ms", "speed ratio train"]
else:
    head += ["dlcaffe train ms"]
if ort is not None:
    head += ["ort fwd ms", "speed ratio vs ort fwd"]
line(head)
print("|" + "---|" * len(head))
rf, rt, ro = [], [], []
for net, (f, t) in ours.items():
    row = [net, f"{f:.2f}"]
    if torch is not None:
        if net in torch:
            r = torch[net]
            tf, tt = fwd(r), r.get("train_ms", r.get("train"))
            rf.append(tf / f); rt.append(tt / t)
            row += [f"{tf:.2f}", f"{tf / f:.2f}", f"{t:.2f}", f"{tt:.2f}", f"{tt / t:.2f}"]
        else:
            row += ["failed", "", f"{t:.2f}", "failed", ""]
    else:
        row += [f"{t:.2f}"]
    if ort is not None:
        if net in ort:
            of = fwd(ort[net])
            ro.append(of / f)
            row += [f"{of:.2f}", f"{of / f:.2f}"]
        else:
            row += ["failed", ""]
    line(row)
g = lambda v: f"{math.exp(sum(map(math.log, v)) / len(v)):.2f}" if v else ""
row = ["geometric mean", ""]
row += ["", g(rf), "", "", g(rt)] if torch is not None else [""]
if ort is not None:
    row += ["", g(ro)]
line(row)
PY
fi
