"""PyTorch's reference timings for bench/bench_nets.sh, the method of
../shared/gpu/torch_ref.py (forward = copy the batch to the device + forward
+ sync; train = copy + zero_grad + forward + backward + Adam step + sync; FP32,
TF32 off unless --tf32 1), for any torchvision net: googlenet and
inception_v3 are built without their auxiliary classifiers, as
tools/onnx/export_for_bench.py exports them (inception_v3's would not even
fit a 224 x 224 input).

Usage: python3 bench/torch_ref.py [--device cuda|cpu] [--batch 16] [--nets a,b] [--tf32 0|1] [--iters 20]
Prints one line per net, then a JSON summary (what bench_nets.sh reads)."""
import argparse
import json
import time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--batch", type=int, default=16)
p.add_argument("--nets", default="alexnet,resnet18,resnet50,vgg16,mobilenet_v2")
p.add_argument("--tf32", type=int, default=0)
p.add_argument("--iters", type=int, default=20)
p.add_argument("--threads", type=int, default=0)
# Automatic mixed precision, as a PyTorch user trains in 16 bits: autocast to
# float16 (with GradScaler's loss scaling) or bfloat16 around the forward pass.
p.add_argument("--amp", default="none", choices=["none", "float16", "bfloat16"])
a = p.parse_args()
if a.threads:
    torch.set_num_threads(a.threads)
torch.backends.cudnn.allow_tf32 = bool(a.tf32)
torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
torch.backends.cudnn.benchmark = True
dev = torch.device(a.device)


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


amp_dtype = None if a.amp == "none" else getattr(torch, a.amp)


def autocast():
    return torch.autocast(dev.type, dtype=amp_dtype, enabled=amp_dtype is not None)


res = {}
for name in a.nets.split(","):
    kwargs = dict(aux_logits=False, init_weights=True) if name in ("googlenet", "inception_v3") else {}
    m = getattr(torchvision.models, name)(weights=None, **kwargs).to(dev)
    x = torch.randn(a.batch, 3, 224, 224)
    y = torch.randint(0, 1000, (a.batch,))
    m.eval()
    with torch.no_grad(), autocast():
        for _ in range(3):
            m(x.to(dev))
            sync()
        t = time.perf_counter()
        for _ in range(a.iters):
            m(x.to(dev))
            sync()
        fwd = (time.perf_counter() - t) / a.iters * 1000
    m.train()
    opt = torch.optim.Adam(m.parameters(), lr=1e-4)
    lossf = torch.nn.CrossEntropyLoss()
    # torch.amp.GradScaler is PyTorch 2.3's; Debian's 1.13 has the CUDA one
    # (disabled, it passes the loss through on any device).
    if hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler(dev.type, enabled=a.amp == "float16")
    else:
        scaler = torch.cuda.amp.GradScaler(enabled=a.amp == "float16")

    def step():
        opt.zero_grad()
        with autocast():
            out = m(x.to(dev))
            if isinstance(out, tuple):
                out = out[0]
            loss = lossf(out, y.to(dev))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sync()

    if dev.type == "cuda":
        # The training step's peak of what the caching allocator holds from
        # the device: dlcaffe bench's "device memory" is its pool's.
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    for _ in range(3):
        step()
    t = time.perf_counter()
    for _ in range(a.iters):
        step()
    tr = (time.perf_counter() - t) / a.iters * 1000
    res[name] = {"fwd_ms": round(fwd, 3), "train_ms": round(tr, 3)}
    if dev.type == "cuda":
        res[name]["train_peak_mib"] = round(torch.cuda.max_memory_reserved() / 2**20, 1)
    print(name, res[name], flush=True)
print(json.dumps({"device": a.device, "batch": a.batch, "tf32": a.tf32, "amp": a.amp,
                  "results": res}))
