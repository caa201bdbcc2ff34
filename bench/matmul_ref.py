"""cuBLAS's reference for tools/gemm_bench (PyTorch's torch.matmul, TF32 off
unless --tf32 1; operands in --dtype, float32 by default, as gemm_bench's
--storage), for the same shapes and in the same command.

Usage: python3 bench/matmul_ref.py --shapes "M,N,K[,ta,tb];..." [--iters 20]
           [--dtype float32|float16|bfloat16] [--tf32 0|1]
Prints one line per shape: M N K op TFLOP/s (ms), fastest of --repeats
rounds of --iters back-to-back calls, as gemm_bench prints its own."""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--shapes", required=True)
p.add_argument("--iters", type=int, default=20)
p.add_argument("--repeats", type=int, default=3)
p.add_argument("--tf32", type=int, default=0)
p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
a = p.parse_args()
dtype = getattr(torch, a.dtype)
torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
dev = "cuda"
print("reference:", torch.cuda.get_device_name(0), "torch", torch.__version__,
      "TF32", "on" if a.tf32 else "off", "dtype", a.dtype)
for item in filter(None, a.shapes.split(";")):
    v = [int(x) for x in item.split(",")]
    M, N, K = v[:3]
    ta, tb = (v[3], v[4]) if len(v) == 5 else (0, 0)
    # op(A) = A^T reads a stored K x M matrix, as gemm_bench does.
    A = (torch.randn(K, M, device=dev, dtype=dtype).t() if ta
         else torch.randn(M, K, device=dev, dtype=dtype))
    B = (torch.randn(N, K, device=dev, dtype=dtype).t() if tb
         else torch.randn(K, N, device=dev, dtype=dtype))
    C = torch.empty(M, N, device=dev, dtype=dtype)
    torch.matmul(A, B, out=C)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(a.repeats):
        start = time.perf_counter()
        for _ in range(a.iters):
            torch.matmul(A, B, out=C)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / a.iters)
    print(f"M={M:<5d} N={N:<6d} K={K:<6d} {'T' if ta else 'N'}{'T' if tb else 'N'}  "
          f"{best * 1e3:9.3f} ms  {2 * M * N * K / best * 1e-12:6.2f} TFLOP/s  [cuBLAS]")
