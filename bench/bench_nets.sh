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
# With MODES, every net runs in each of the modes listed (default float32):
# float32 (float math, TF32 off), tf32 (DLCAFFE_ALLOW_TF32=1), bfloat16 and
# float16 (--storage: every layer stored and multiplied in that type). The
# reference runs in the same modes as PyTorch users run them: TORCH_REF gets
# "--tf32 0 --amp none", "--tf32 1 --amp none", "--tf32 1 --amp bfloat16"
# and "--tf32 1 --amp float16" appended (autocast). The table then has a
# mode column, a row per net and mode, and after it each net's best mode of
# each framework and the ratio of the two bests -- PyTorch's best mode
# against ours, as a user would pick them:
#
#   MODES="float32 tf32 bfloat16 float16" TORCH_REF="python3 bench/torch_ref.py" \
#     DLCAFFE=build/tools/dlcaffe bash bench/bench_nets.sh
#
# With TORCH_REF, a last table gives each net and mode's training-step
# device memory: what dlcaffe bench's pool held ("device memory") against
# PyTorch's caching allocator's peak (torch.cuda.max_memory_reserved; n/a
# on a CPU), and their ratio (above 1: ours is smaller).
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

modes="${MODES:-float32}"
for mode in $modes; do
  case "$mode" in
    float32|tf32|bfloat16|float16) ;;
    *) echo "bench_nets.sh: MODES: unknown mode '$mode' (float32, tf32, bfloat16, float16)" >&2
       exit 2 ;;
  esac
done

# `dlcaffe bench` in mode $1 on model $2 in pass $3: ms per iteration and
# the device memory its pool held (MiB).
bench_run() {
  local mode="$1" model="$2" pass="$3" storage="" tf32=0
  case "$mode" in
    tf32) tf32=1 ;;
    bfloat16) storage=BFLOAT16 ;;
    float16) storage=FLOAT16 ;;
  esac
  DLCAFFE_ALLOW_TF32=$tf32 "$dlcaffe" bench --model="$model" --mode="$pass" \
    ${storage:+--storage=$storage} --iterations="$iters" --warmup="$warmup" \
    2> >(grep 'error' >&2) |
    awk '/^bench .* ms\/iter/ {ms = $4}
         /^bench .* device memory/ {for (i = 1; i < NF; ++i) if ($i == "memory") mib = $(i + 1)}
         END {if (ms != "") print ms, (mib == "" ? "-" : mib)}'
}

echo "device: $("$dlcaffe" device_query 2>&1 | awk '/Name:/ && !seen++ {sub(/.*Name: /, ""); print}'), batch $batch"
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
  for mode in $modes; do
    fwd="" trn="" mib=""
    read -r fwd _ < <(bench_run "$mode" "$deploy" forward) || true
    read -r trn mib < <(bench_run "$mode" "$train" train) || true
    [ -n "$fwd" ] && [ -n "$trn" ] || { echo "$net ($mode): failed" >&2; continue; }
    echo "$net $fwd $trn $mode $mib" | tee -a "$work/dlcaffe.txt"
  done
done

touch "$work/dlcaffe.txt"
torch_json=""
if [ -n "${TORCH_REF:-}" ]; then
  # One JSON line per mode: {"mode": ..., "results": {...}}.
  : > "$work/torch.json"
  for mode in $modes; do
    case "$mode" in
      float32) flags="--tf32 0 --amp none" ;;
      tf32) flags="--tf32 1 --amp none" ;;
      bfloat16) flags="--tf32 1 --amp bfloat16" ;;
      float16) flags="--tf32 1 --amp float16" ;;
    esac
    $TORCH_REF --batch "$batch" --nets "$(echo $nets | tr ' ' ',')" $flags | tail -1 |
      python3 -c "import json,sys; r=json.load(sys.stdin); r['mode']='$mode'; print(json.dumps(r))" \
      >> "$work/torch.json" || echo "torch ($mode): $TORCH_REF failed" >&2
  done
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
# (net, mode) -> (forward ms, train ms), in the order run; the training
# run's device memory (MiB, None where it printed none).
ours, ours_mib = {}, {}
for l in open(sys.argv[1]):
    net, f, t, mode, mib = (l.split() + ["-"])[:5]
    ours[(net, mode)] = (float(f), float(t))
    ours_mib[(net, mode)] = None if mib == "-" else float(mib)
modes = list(dict.fromkeys(m for _, m in ours))
several = len(modes) > 1


def load(path, by_mode=False):
    # None: that reference was not asked for; {}: it produced nothing.
    if not path:
        return None
    try:
        if by_mode:  # one JSON line per mode
            out = {}
            for line in open(path):
                if line.strip():
                    r = json.loads(line)
                    for net, v in r["results"].items():
                        out[(net, r["mode"])] = v
            return out
        return json.load(open(path))["results"]
    except (ValueError, KeyError, OSError):
        return {}


torch, ort = load(sys.argv[2], by_mode=True), load(sys.argv[3])
fwd = lambda r: r.get("forward_ms", r.get("fwd_ms", r.get("forward")))
line = lambda cells: print("|" + "".join(f" {c} |" if c else " |" for c in cells))
head = ["net"] + (["mode"] if several else []) + ["dlcaffe fwd ms"]
if torch is not None:
    head += ["torch fwd ms", "speed ratio fwd", "dlcaffe train ms", "torch train ms", "speed ratio train"]
else:
    head += ["dlcaffe train ms"]
if ort is not None:
    head += ["ort fwd ms", "speed ratio vs ort fwd"]
line(head)
print("|" + "---|" * len(head))
rf, rt, ro = [], [], []
for (net, mode), (f, t) in ours.items():
    row = [net] + ([mode] if several else []) + [f"{f:.2f}"]
    if torch is not None:
        if (net, mode) in torch:
            r = torch[(net, mode)]
            tf, tt = fwd(r), r.get("train_ms", r.get("train"))
            rf.append(tf / f); rt.append(tt / t)
            row += [f"{tf:.2f}", f"{tf / f:.2f}", f"{t:.2f}", f"{tt:.2f}", f"{tt / t:.2f}"]
        else:
            row += ["failed", "", f"{t:.2f}", "failed", ""]
    else:
        row += [f"{t:.2f}"]
    if ort is not None and mode != modes[0]:
        row += ["", ""]  # ONNX Runtime runs float32 only: on the first mode's row
    elif ort is not None:
        if net in ort:
            of = fwd(ort[net])
            ro.append(of / f)
            row += [f"{of:.2f}", f"{of / f:.2f}"]
        else:
            row += ["failed", ""]
    line(row)
g = lambda v: f"{math.exp(sum(map(math.log, v)) / len(v)):.2f}" if v else ""
row = ["geometric mean"] + ([""] if several else []) + [""]
row += ["", g(rf), "", "", g(rt)] if torch is not None else [""]
if ort is not None:
    row += ["", g(ro)]
line(row)

if several and torch is not None:
    # Each framework's best mode per net and pass, as a user would pick it.
    print()
    line(["net", "pass", "dlcaffe best", "torch best", "speed ratio"])
    print("|---|---|---|---|---|")
    best_f, best_t = [], []
    for net in dict.fromkeys(n for n, _ in ours):
        for p, index, key in (("forward", 0, "fwd"), ("train", 1, "train")):
            mine = [(ours[(net, m)][index], m) for m in modes if (net, m) in ours]
            theirs = [((fwd(torch[(net, m)]) if key == "fwd" else
                        torch[(net, m)].get("train_ms", torch[(net, m)].get("train"))), m)
                      for m in modes if (net, m) in torch]
            if not mine or not theirs:
                continue
            a, b = min(mine), min(theirs)
            (best_f if key == "fwd" else best_t).append(b[0] / a[0])
            line([net, p, f"{a[0]:.2f} ({a[1]})", f"{b[0]:.2f} ({b[1]})", f"{b[0] / a[0]:.2f}"])
    line(["geometric mean", "forward", "", "", g(best_f)])
    line(["geometric mean", "train", "", "", g(best_t)])

if torch is not None:
    # The training step's device memory: dlcaffe's pool against PyTorch's
    # caching allocator's peak (CUDA only; n/a elsewhere). Above 1, ours is
    # smaller.
    print()
    line(["net", "mode", "dlcaffe train MiB", "torch train MiB", "memory ratio"])
    print("|---|---|---|---|---|")
    for (net, mode) in ours:
        mine = ours_mib[(net, mode)]
        theirs = torch.get((net, mode), {}).get("train_peak_mib")
        line([net, mode, f"{mine:.1f}" if mine else "n/a", f"{theirs:.1f}" if theirs else "n/a",
              f"{theirs / mine:.2f}" if mine and theirs else ""])
PY
fi
