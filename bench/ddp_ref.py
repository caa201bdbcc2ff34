#!/usr/bin/env python3
"""PyTorch DistributedDataParallel as the reference for bench/scale.sh.

Trains a torchvision net the way scale.sh trains dlcaffe's: BATCH constant
images (zeros, 224 x 224) per replica per step, cross-entropy against class 0,
SGD with momentum 0.9 at lr 1e-4, FP32 with TF32 off; the gradients averaged
by DDP (NCCL on GPUs, one GPU per rank; gloo on the CPU). For each world size
asked, WARMUP untimed steps, then ITERS timed ones; images/s counts the images
of all replicas. The last line printed is JSON:

  {"net": ..., "batch": ..., "device": ..., "results": {"1": {"images_per_s": ...,
   "step_ms": ...}, "2": {...}}}

  /usr/bin/python3 bench/ddp_ref.py --net resnet50 --batch 16 --world-sizes 1,2
  /usr/bin/python3 bench/ddp_ref.py --net resnet50 --batch 2 --world-sizes 1,2 --device cpu
"""
import argparse
import json
import os
import socket
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_rank(rank, world, args, port, queue):
    import torch
    import torch.distributed as dist
    import torchvision

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    gpu = args.device == "cuda"
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank, world_size=world)
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        torch.set_num_threads(max(1, args.threads // world))
        device = torch.device("cpu")
    torch.manual_seed(1701)
    model = getattr(torchvision.models, args.net)(weights=None).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[rank] if gpu else None, bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.zeros(args.batch, 3, 224, 224, device=device)
    y = torch.zeros(args.batch, dtype=torch.long, device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(ddp(x), y).backward()
        optimizer.step()

    def sync():
        if gpu:
            torch.cuda.synchronize(device)
        dist.barrier()

    for _ in range(args.warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(args.iters):
        step()
    sync()
    elapsed = time.perf_counter() - start
    if rank == 0:
        queue.put({"images_per_s": world * args.batch * args.iters / elapsed,
                   "step_ms": 1000 * elapsed / args.iters})
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", default="resnet50")
    parser.add_argument("--batch", type=int, default=16, help="images per replica per step")
    parser.add_argument("--world-sizes", default="1,2", help="replica counts, e.g. 1,2,4")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--bucket-mb", type=float, default=25)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="CPU only: threads shared by the ranks")
    args = parser.parse_args()

    import torch
    import torch.multiprocessing as mp

    sizes = [int(s) for s in args.world_sizes.split(",") if s]
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("ddp_ref: no CUDA device (use --device cpu)")
        have = torch.cuda.device_count()
        if max(sizes) > have:
            sys.exit(f"ddp_ref: {max(sizes)} replicas need as many GPUs (NCCL takes one per "
                     f"rank); {have} here")
        name = torch.cuda.get_device_name(0)
    else:
        name = "cpu"
    results = {}
    context = mp.get_context("spawn")
    for world in sizes:
        queue = context.SimpleQueue()
        mp.start_processes(run_rank, args=(world, args, free_port(), queue), nprocs=world,
                           join=True, start_method="spawn")
        results[str(world)] = queue.get()
        print(f"ddp {args.net} x{world}: {results[str(world)]['images_per_s']:.1f} images/s",
              file=sys.stderr)
    print(json.dumps({"net": args.net, "batch": args.batch, "device": name,
                      "torch": torch.__version__, "results": results}))


if __name__ == "__main__":
    main()
