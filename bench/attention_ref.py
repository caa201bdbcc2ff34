"""PyTorch's reference for bench/attention_bench.sh:
F.scaled_dot_product_attention on the GPU, causal or not, with tensors in
the mode's dtype (float32 with TF32 off or on, bfloat16, float16); prints one
line like the script's: T, forward ms, forward+backward ms, the allocator's
peak above the inputs, outputs and gradients (MiB), and the kernel PyTorch
chose."""
import argparse
import time

import torch
import torch.nn.functional as F


def timed(fn, iters):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head_dim", type=int, default=64)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--causal", type=int, default=1)
    parser.add_argument("--mode", default="float32",
                        choices=["float32", "tf32", "bfloat16", "float16"])
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = args.mode == "tf32"
    torch.backends.cudnn.allow_tf32 = args.mode == "tf32"
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(args.mode, torch.float32)
    causal = bool(args.causal)
    shape = (args.batch, args.heads, args.length, args.head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=dtype)

    def forward():
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def forward_backward():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        q.grad = k.grad = v.grad = None
        out.backward(grad)

    fwd = timed(forward, args.iters)
    both = timed(forward_backward, args.iters)
    # Memory of one forward+backward beyond its output and the three
    # gradients: what the kernels keep for backward and their workspace.
    q.grad = k.grad = v.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    forward_backward()
    torch.cuda.synchronize()
    extra = (torch.cuda.max_memory_allocated() - base - 4 * q.numel() * q.element_size()) / 2**20
    print("%-6d %12.3f %12.3f %14.2f   pytorch %s sdpa, %s" % (
        args.length, fwd, both, max(0.0, extra), torch.__version__, args.mode))


if __name__ == "__main__":
    main()
