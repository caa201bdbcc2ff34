#!/usr/bin/env python3
"""Reference for bench/lenet_speed.sh: Caffe's LeNet trained with PyTorch on the
CPU (same layers, batch 64, SGD momentum 0.9, weight decay 5e-4), timed the way
dlcaffe's solver reports iterations per second (forward + backward + update)."""
import argparse
import time

import torch
import torch.nn as nn


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    net = lenet()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    batches = [(torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,))) for _ in range(16)]

    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    for i in range(args.warmup):
        step(i)
    start = time.perf_counter()
    for i in range(args.iters):
        step(i)
    elapsed = time.perf_counter() - start
    print(f"pytorch {torch.__version__} lenet train: {args.iters / elapsed:.1f} iter/s "
          f"({args.threads} threads)")


if __name__ == "__main__":
    main()
