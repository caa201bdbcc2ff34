#!/usr/bin/env bash
# The Attention layer alone against PyTorch's scaled_dot_product_attention,
# in one command: self-attention, B x H heads of head size D, at each
# sequence length T; forward and forward+backward ms (dlcaffe: `dlcaffe
# time`'s per-layer averages; PyTorch: CUDA-synchronised wall time), and the
# memory beyond Q, K, V, O and their gradients (dlcaffe: the layer's own
# buffers, 2 floats per query row; PyTorch: the CUDA allocator's peak above
# the tensors).
#
#   DLCAFFE=.../dlcaffe [TORCH_REF=python3] bench/attention_bench.sh [T ...]
#
# B, H, D, ITERS come from the environment (4, 12, 64, 10); CAUSAL=1|0
# (default 1); MODE=float32|tf32|bfloat16|float16 (default float32): the
# net's storage and math type (tf32: DLCAFFE_ALLOW_TF32=1) and PyTorch's
# tensors' dtype (tf32: float32 with TF32 allowed), so that 16-bit runs meet
# SDPA's flash kernels.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dlcaffe="${DLCAFFE:-$root/build/tools/dlcaffe}"
B="${B:-4}" H="${H:-12}" D="${D:-64}" ITERS="${ITERS:-10}"
CAUSAL="${CAUSAL:-1}" MODE="${MODE:-float32}"
net_type="" tf32=0
case "$MODE" in
  float32) ;;
  tf32) tf32=1 ;;
  bfloat16) net_type=BFLOAT16 ;;
  float16) net_type=FLOAT16 ;;
  *) echo "attention_bench.sh: MODE: unknown mode '$MODE' (float32, tf32, bfloat16, float16)" >&2
     exit 2 ;;
esac
causal=false
[ "$CAUSAL" = 1 ] && causal=true
lengths=("$@")
[ ${#lengths[@]} -gt 0 ] || lengths=(512 1024 2048 4096 8192)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "B $B, H $H, D $D, causal $CAUSAL, mode $MODE"
printf "%-6s %12s %12s %14s\n" T "fwd ms" "fwd+bwd ms" "extra MiB"
for T in "${lengths[@]}"; do
  cat > "$work/att.prototxt" <<NET
name: "attention_T$T"
force_backward: true
${net_type:+default_forward_type: $net_type default_backward_type: $net_type}
layer { name: "qkv" type: "Input" top: "q" top: "k" top: "v"
        input_param { shape { dim: $B dim: $H dim: $T dim: $D } shape { dim: $B dim: $H dim: $T dim: $D }
                      shape { dim: $B dim: $H dim: $T dim: $D } } }
layer { name: "att" type: "Attention" bottom: "q" bottom: "k" bottom: "v" top: "o"
        attention_param { causal: $causal } }
NET
  DLCAFFE_ALLOW_TF32=$tf32 "$dlcaffe" time --model="$work/att.prototxt" --iterations="$ITERS" > "$work/log" 2>&1 ||
    { tail -n 20 "$work/log"; exit 1; }
  fwd=$(grep -E ' att\s+forward:' "$work/log" | sed -E 's/.*forward: ([0-9.e+-]+) ms.*/\1/')
  bwd=$(grep -E ' att\s+backward:' "$work/log" | sed -E 's/.*backward: ([0-9.e+-]+) ms.*/\1/')
  extra=$(awk -v b="$B" -v h="$H" -v t="$T" 'BEGIN { printf "%.2f", 2 * b * h * t * 4 / 1048576 }')
  printf "%-6s %12.3f %12.3f %14s   dlcaffe\n" "$T" "$fwd" "$(awk -v a="$fwd" -v b="$bwd" 'BEGIN { print a + b }')" "$extra"
  if [ -n "${TORCH_REF:-}" ]; then
    "$TORCH_REF" "$root/bench/attention_ref.py" --batch "$B" --heads "$H" --head_dim "$D" \
      --length "$T" --iters "$ITERS" --causal "$CAUSAL" --mode "$MODE"
  fi
done
