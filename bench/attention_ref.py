"""PyTorch's reference for bench/attention_bench.sh: causal
F.scaled_dot_product_attention in FP32 (TF32 off) on the GPU; prints one
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
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    shape = (args.batch, args.heads, args.length, args.head_dim)
    q, k, v = (torch.randn(shape, device="cuda", requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device="cuda")

    def forward():
        with torch.no_grad():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward_backward():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
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
    extra = (torch.cuda.max_memory_allocated() - base - 4 * q.numel() * 4) / 2**20
    print("%-6d %12.3f %12.3f %14.2f   pytorch %s sdpa, fp32" % (args.length, fwd, both,
                                                              max(0.0, extra), torch.__version__))


if __name__ == "__main__":
    main()
