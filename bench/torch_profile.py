#!/usr/bin/env python3
"""Where PyTorch's training step spends the GPU's time, per CUDA kernel: the
counterpart of `dlcaffe time --kernels` for comparing the two frameworks
kernel class by kernel class. Same step as torch_ref.py (batch, Adam, FP32
with TF32 off by default); prints the kernels by total device time per step.

    python3 bench/torch_profile.py --nets resnet50,vgg16 --batch 16 --steps 5
"""
import argparse

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=16)
p.add_argument("--nets", default="resnet50")
p.add_argument("--tf32", type=int, default=0)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--top", type=int, default=30)
a = p.parse_args()
torch.backends.cudnn.allow_tf32 = bool(a.tf32)
torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")

for name in a.nets.split(","):
    m = getattr(torchvision.models, name)(weights=None).to(dev).train()
    x = torch.randn(a.batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (a.batch,), device=dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-4)
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        lossf(m(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = e.cuda_time_total
        if t > 0 and e.device_type == torch.autograd.DeviceType.CUDA:
            rows.append((t / a.steps / 1000.0, e.count / a.steps, e.key))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"== {name}: kernel time per training step {total:.3f} ms (batch {a.batch})")
    for ms, calls, key in rows[: a.top]:
        print(f"{ms:9.3f} ms {100 * ms / total:5.1f}% {calls:6.0f} calls  {key[:150]}")
