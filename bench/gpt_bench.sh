#!/usr/bin/env bash
# A GPT-2-small-shaped decoder, dlcaffe against PyTorch, in one command: the
# net models/char_gpt/make_char_gpt.py writes (token Embed tied to the head,
# learned positions, LAYERS pre-LN blocks of causal Attention with HEADS heads
# and a 4x GELU MLP, a final LayerNorm; mean cross-entropy over all
# BATCH x WINDOW positions), FP32, in three measurements:
#
#   forward   ms per batch of BATCH x WINDOW random tokens to logits
#             (BATCH, WINDOW, VOCAB), the tokens copied in and the logits
#             copied back to the host (`dlcaffe bench --mode=forward`);
#   train     ms per step: forward, loss, backward, Adam (lr 1e-4)
#             (`dlcaffe bench --mode=train`);
#   generate  tokens/s at batch 1 with a key/value cache: a prompt of 16
#             tokens, then TOKENS greedy tokens, the rate over those after the
#             first (`dlcaffe generate --temperature=0` on the deploy net with
#             random weights and a made-up vocabulary of VOCAB characters).
#
# Memory: dlcaffe's is every device buffer its pool holds after the run (in
# use or kept for reuse; `bench`'s "device memory" line, n/a where the binary
# does not print it; the forward run uses the inference memory plan); PyTorch's is the CUDA allocator's peak
# (max_memory_allocated after reset_peak_memory_stats). Both include the
# weights (and for train the gradients and Adam's two moments).
#
# With TORCH_REF (a python with torch), bench/gpt_ref.py runs the same
# architecture written with torch.nn (F.scaled_dot_product_attention, CUDA-
# synchronised wall time) under PyTorch's own defaults (matmul TF32 off, cuDNN
# TF32 on; the script reads and prints them) and under FP32 with TF32 off.
# The table's ratios are PyTorch's time over ours (generate: our tokens/s over
# PyTorch's): above 1 we are faster.
#
#   DLCAFFE=.../dlcaffe [TORCH_REF=python3] bench/gpt_bench.sh
#
# The shape comes from the environment: VOCAB LAYERS WIDTH HEADS WINDOW BATCH
# (50257 12 768 12 1024 8: GPT-2 small), ITERS and WARMUP (10 3: timed and
# untimed iterations), TOKENS (128). Our Python package (`import caffe`, for
# make_char_gpt.py and the random weights) must be on PYTHONPATH; PYTHON
# names its interpreter (default: TORCH_REF, else python3). Without the
# package's Net (or a dlcaffe without `generate`) the generate column is n/a.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dlcaffe="${DLCAFFE:-$root/build/tools/dlcaffe}"
VOCAB="${VOCAB:-50257}" LAYERS="${LAYERS:-12}" WIDTH="${WIDTH:-768}" HEADS="${HEADS:-12}"
WINDOW="${WINDOW:-1024}" BATCH="${BATCH:-8}" ITERS="${ITERS:-10}" WARMUP="${WARMUP:-3}"
TOKENS="${TOKENS:-128}"
python="${PYTHON:-${TORCH_REF:-python3}}"
[ -x "$dlcaffe" ] || { echo "gpt_bench: no dlcaffe at '$dlcaffe' (set DLCAFFE)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Runs a command with its output in $work/$1.log; on failure shows the end of
# the log and stops the script.
run_logged() {
  local name="$1"
  shift
  if ! "$@" > "$work/$name.log" 2>&1; then
    echo "gpt_bench: $name failed: $*" >&2
    tail -n 25 "$work/$name.log" >&2
    exit 1
  fi
}

shape=(--vocab_size "$VOCAB" --layers "$LAYERS" --width "$WIDTH" --heads "$HEADS"
       --window "$WINDOW" --batch "$BATCH")
if [ -n "${NET_DIR:-}" ]; then
  # Prototxts written elsewhere (a GPU host without our Python package):
  # NET_DIR/bench/bench_{train,forward}.prototxt and NET_DIR/deploy/deploy.prototxt.
  cp -r "$NET_DIR/bench" "$NET_DIR/deploy" "$work/"
else
  run_logged make_bench "$python" "$root/models/char_gpt/make_char_gpt.py" --bench "${shape[@]}" \
    --out "$work/bench"
  run_logged make_deploy "$python" "$root/models/char_gpt/make_char_gpt.py" "${shape[@]}" \
    --out "$work/deploy"
fi

# Parameters as the shapes give them (tied head once): V*D + T*D (positions),
# per block 12 D^2 + 13 D, the final LayerNorm 2 D.
formula=$(awk -v v="$VOCAB" -v t="$WINDOW" -v l="$LAYERS" -v d="$WIDTH" \
  'BEGIN { printf "%.0f", v * d + t * d + l * (12 * d * d + 13 * d) + 2 * d }')
echo "GPT: vocab $VOCAB, $LAYERS layers, width $WIDTH, $HEADS heads, window $WINDOW," \
     "batch $BATCH; $ITERS iterations after $WARMUP warm-up;" \
     "generate $TOKENS tokens after a prompt of 16"

# The generation inputs: a vocabulary of VOCAB distinct printable non-ASCII
# characters in code-point order (convert_text's vocab.txt format) and a
# prompt of 16 of them; random weights for the deploy net from our Python
# package, and the net's parameter count (blobs shared by name counted once).
run_logged vocabulary "$python" - "$work" "$VOCAB" <<'PY'
import sys
work, size = sys.argv[1], int(sys.argv[2])
chars, c = [], 0xA1
while len(chars) < size:
    if not 0xD800 <= c <= 0xDFFF and chr(c).isprintable():
        chars.append(chr(c))
    c += 1
with open(work + '/vocab.txt', 'w', encoding='utf-8', newline='\n') as f:
    f.write('# dlcaffe vocabulary: level=char size=%d\n' % size)
    f.writelines(ch + '\n' for ch in chars)
with open(work + '/prompt.txt', 'w', encoding='utf-8') as f:
    f.write(''.join(chars[(i * 7919) % size] for i in range(16)))
PY
# (In a subshell that does not exec python, so that the shell's note of a
# crash lands in the log too.)
weights_rc=0
( "$python" - "$work" <<'PY'
import sys
work = sys.argv[1]
try:
    import caffe
    from google.protobuf import text_format
except Exception as e:  # noqa: BLE001
    sys.exit('import caffe failed: %s: %s' % (type(e).__name__, e))
deploy = work + '/deploy/deploy.prototxt'
net = caffe.Net(deploy, caffe.TEST)
proto = text_format.Parse(open(deploy).read(), caffe.proto.caffe_pb2.NetParameter())
specs = {layer.name: layer.param for layer in proto.layer}
seen, count = set(), 0
for name, blobs in net.params.items():
    for i, blob in enumerate(blobs):
        key = (i < len(specs.get(name, [])) and specs[name][i].name) or (name, i)
        if key not in seen:
            seen.add(key)
            count += blob.data.size
net.save(work + '/weights.caffemodel')
print('dlcaffe parameters %d' % count)
PY
  exit $? ) > "$work/weights.log" 2>&1 || weights_rc=$?
if [ "$weights_rc" -ne 0 ]; then
  rm -f "$work/weights.caffemodel"
  if [ "$weights_rc" -gt 128 ]; then
    why="python died of signal $((weights_rc - 128)):"
    why="$why $(head -n 1 "$work/weights.log" | cut -c1-120)"
  else
    why="$(tail -n 1 "$work/weights.log")"
  fi
fi
if [ ! -f "$work/weights.caffemodel" ]; then
  # Without the Python package: the weights a training run of no iterations
  # snapshots (the fillers' values; the deploy net has the same layer names).
  cat > "$work/zero_solver.prototxt" <<SOLVER
net: "$work/bench/bench_train.prototxt"
base_lr: 0
max_iter: 0
snapshot_prefix: "$work/random"
SOLVER
  if "$dlcaffe" train --solver="$work/zero_solver.prototxt" > "$work/zero_train.log" 2>&1 &&
     [ -f "$work/random_iter_0.caffemodel" ]; then
    mv "$work/random_iter_0.caffemodel" "$work/weights.caffemodel"
  else
    why="$why; dlcaffe train --max_iter=0 failed: $(tail -n 1 "$work/zero_train.log")"
  fi
fi
ours_params=$(sed -n 's/^dlcaffe parameters //p' "$work/weights.log")
if [ -n "$ours_params" ]; then
  echo "dlcaffe parameters $ours_params (the net's blobs, the tied head once;" \
       "from the shapes $formula)"
else
  echo "dlcaffe parameters: from the shapes $formula (the Python package could not make the net:" \
       "$why)"
fi

# Our three measurements (their result lines shown as they come).
value() {  # sed expression, log -> the value or n/a
  local v
  v=$(sed -nE "$1" "$2" | tail -n 1)
  echo "${v:-n/a}"
}
# Forward runs under the inference memory plan (activations whose lifetimes
# do not overlap share storage), as PyTorch's no_grad forward frees its
# intermediates. With TUNE=1, `dlcaffe tune` first measures the training
# net's GEMM shapes on this device and keeps the fastest kernels.
if [ "${TUNE:-0}" = 1 ]; then
  run_logged tune "$dlcaffe" tune --model="$work/bench/bench_train.prototxt"
  grep -E 'tuned|forward \+ backward pass' "$work/tune.log" | sed 's/^.*\] //' | tail -n 3
fi
for mode in forward train; do
  plan=()
  [ "$mode" = forward ] && plan=(--memory_plan)
  run_logged "bench_$mode" "$dlcaffe" bench --model="$work/bench/bench_$mode.prototxt" \
    --mode="$mode" --iterations="$ITERS" --warmup="$WARMUP" "${plan[@]}"
  grep -E '^bench ' "$work/bench_$mode.log" | sed 's/^/dlcaffe /'
done
our_fwd=$(value 's/^bench .* forward ([0-9.e+-]+) ms\/iter.*/\1/p' "$work/bench_forward.log")
our_train=$(value 's/^bench .* train ([0-9.e+-]+) ms\/iter.*/\1/p' "$work/bench_train.log")
our_fwd_mib=$(value 's/^bench .* device memory ([0-9.]+) MiB.*/\1/p' "$work/bench_forward.log")
our_train_mib=$(value 's/^bench .* device memory ([0-9.]+) MiB.*/\1/p' "$work/bench_train.log")

our_gen=n/a
if [ ! -f "$work/weights.caffemodel" ]; then
  echo "dlcaffe generate: skipped (no random weights: $why)"
elif ! { "$dlcaffe" > "$work/usage.log" 2>&1 || true
          grep -qE '^ +generate ' "$work/usage.log"; }; then
  echo "dlcaffe generate: skipped ($dlcaffe has no generate command)"
else
  run_logged generate "$dlcaffe" generate --model="$work/deploy/deploy.prototxt" \
    --weights="$work/weights.caffemodel" --vocab="$work/vocab.txt" \
    --prompt="$(cat "$work/prompt.txt")" --tokens="$TOKENS" --temperature=0
  line=$(grep -E 'tokens/s' "$work/generate.log" | tail -n 1 | sed -E 's/^.*\] //')
  echo "dlcaffe generate: ${line:-no tokens/s line in its log}"
  our_gen=$(value 's/.*[ (]([0-9.e+-]+) tokens\/s.*/\1/p' "$work/generate.log")
fi

# PyTorch's, both settings in one run.
if [ -n "${TORCH_REF:-}" ]; then
  run_logged torch "$TORCH_REF" "$root/bench/gpt_ref.py" --vocab "$VOCAB" --layers "$LAYERS" \
    --width "$WIDTH" --heads "$HEADS" --window "$WINDOW" --batch "$BATCH" --iters "$ITERS" \
    --warmup "$WARMUP" --tokens "$TOKENS" --mode all
  grep -vE '^\s*$' "$work/torch.log"
  torch_params=$(value 's/^pytorch parameters ([0-9]+) .*/\1/p' "$work/torch.log")
  reference=${ours_params:-$formula}
  if [ "$torch_params" != "$reference" ]; then
    echo "gpt_bench: WARNING: PyTorch's model has $torch_params parameters, ours $reference:" \
         "the two architectures differ" >&2
  fi
fi

# The table.
ratio() {  # theirs ours -> theirs / ours, or -
  awk -v t="$1" -v o="$2" 'BEGIN { if (t ~ /^[0-9.e+-]+$/ && o ~ /^[0-9.e+-]+$/ && o > 0)
                                      printf "%.2f", t / o; else printf "-" }'
}
num() {  # a value with 1 or 3 decimals, or as it is (n/a)
  awk -v v="$1" -v p="$2" \
    'BEGIN { if (v ~ /^[0-9.e+-]+$/) printf "%." p "f", v; else printf "%s", v }'
}
row() {  # label fwd train fwd_mib train_mib gen [ratios]
  printf "%-48s %10s %10s %10s %10s %10s %7s %7s %7s\n" "$1" "$(num "$2" 3)" "$(num "$3" 3)" \
    "$(num "$4" 1)" "$(num "$5" 1)" "$(num "$6" 1)" "${7:--}" "${8:--}" "${9:--}"
}
echo
printf "%-48s %10s %10s %10s %10s %10s %7s %7s %7s\n" "" "fwd ms" "train ms" "fwd MiB" \
  "train MiB" "gen tok/s" "fwd x" "train x" "gen x"
row dlcaffe "$our_fwd" "$our_train" "$our_fwd_mib" "$our_train_mib" "$our_gen"
if [ -n "${TORCH_REF:-}" ]; then
  for setting in "FP32 (TF32 off)" "default"; do
    pattern="^pytorch $(printf '%s' "$setting" | sed 's/[()]/\\&/g')"
    [ "$setting" = default ] && pattern='^pytorch default \([^)]*\)'
    fwd=$(value "s/$pattern forward +([0-9.e+-]+) ms\/iter.*/\1/p" "$work/torch.log")
    fwd_mib=$(value "s/$pattern forward .* peak ([0-9.]+|n\/a) MiB.*/\1/p" "$work/torch.log")
    train=$(value "s/$pattern train +([0-9.e+-]+) ms\/iter.*/\1/p" "$work/torch.log")
    train_mib=$(value "s/$pattern train .* peak ([0-9.]+|n\/a) MiB.*/\1/p" "$work/torch.log")
    gen=$(value "s/$pattern generate +([0-9.e+-]+|nan) tokens\/s.*/\1/p" "$work/torch.log")
    label="pytorch $setting"
    [ "$setting" = default ] && label=$(sed -nE 's/^(pytorch default \([^)]*\)) forward .*/\1/p' \
      "$work/torch.log" | awk 'NR == 1')
    row "${label:-pytorch default}" "$fwd" "$train" "$fwd_mib" "$train_mib" "$gen" \
      "$(ratio "$fwd" "$our_fwd")" "$(ratio "$train" "$our_train")" "$(ratio "$our_gen" "$gen")"
  done
  echo "(x: PyTorch's time / ours, for generate our tokens/s / PyTorch's: above 1 we are faster)"
  echo "(forward ms include copying the tokens in and the logits," \
       "$BATCH x $WINDOW x $VOCAB floats, out to host memory, in both;" \
       "PyTorch's lines above also give its time without the copies)"
fi
