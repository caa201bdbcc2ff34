#!/usr/bin/env python3
"""PyTorch's side of bench/train_curve.sh: torchvision's resnet18 (BatchNorm,
one input channel, 10 classes) trained on MNIST with plain SGD, and the same
initial weights exported to ONNX for dlcaffe.

    python3 bench/train_curve_ref.py --mnist DIR --out DIR [--steps 300]
        [--batch 32] [--lr 0.01] [--momentum 0.9] [--device cuda|cpu]

writes OUT/resnet18_mnist.onnx (the initial weights; eval-mode export with
BatchNormalization kept as nodes, input 'data', output 'logits'),
OUT/torch_loss.txt ("step loss" per line) and OUT/torch64_loss.txt (the same
run in float64: the exact curve). The batches are the training
images in file order (what dlcaffe's Data layer reads from the LMDB that
convert_mnist_data writes), scaled by 1/256 as Caffe's LeNet does; BatchNorm
uses batch statistics (train mode); the loss is the batch mean of the
softmax cross entropy (SoftmaxWithLoss). TF32 off.
"""
import argparse
import gzip
import inspect
import os

import numpy as np
import torch
import torchvision


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(mnist, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(mnist, candidate)
        if os.path.exists(path):
            return path
    raise SystemExit(f"train_curve_ref.py: error: {mnist} has no {name}[.gz]")


def model():
    torch.manual_seed(1701)
    net = torchvision.models.resnet18(num_classes=10)
    net.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    # BatchNorm's affines start near, not at, 1 and 0: PyTorch's exporter
    # merges initializers of equal values, and every fresh BatchNorm of a
    # width would come in as one shared (tied) parameter.
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.9, 1.1)
                m.bias.uniform_(-0.1, 0.1)
    return net


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mnist", required=True, help="folder with the MNIST IDX files (.gz or not)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)

    images = read_idx(find(args.mnist, "train-images-idx3-ubyte"))
    labels = read_idx(find(args.mnist, "train-labels-idx1-ubyte"))
    need = args.steps * args.batch
    if need > len(images):
        raise SystemExit(f"train_curve_ref.py: error: {args.steps} steps of {args.batch} need "
                         f"{need} images, MNIST has {len(images)}")

    net = model()
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(net.eval(), torch.zeros(args.batch, 1, 28, 28),
                      os.path.join(args.out, "resnet18_mnist.onnx"), opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["data"], output_names=["logits"], **legacy)

    # float32 (the run to compare with) and float64 (the exact curve, from
    # the same float32 weights: how far float32 rounding alone takes a run).
    initial = net.state_dict()
    for dtype, name in ((torch.float32, "torch_loss.txt"), (torch.float64, "torch64_loss.txt")):
        net = model()
        net.load_state_dict(initial)
        net = net.to(device=args.device, dtype=dtype).train()
        opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
        loss_fn = torch.nn.CrossEntropyLoss()
        with open(os.path.join(args.out, name), "w") as log:
            for step in range(args.steps):
                lo = step * args.batch
                x = torch.from_numpy(images[lo:lo + args.batch].astype(np.float32) / 256.0)
                y = torch.from_numpy(labels[lo:lo + args.batch].astype(np.int64))
                x, y = x.unsqueeze(1).to(device=args.device, dtype=dtype), y.to(args.device)
                opt.zero_grad()
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
                log.write(f"{step} {loss.item():.6f}\n")
        print(f"train_curve_ref.py: torch {torch.__version__} {dtype} on {args.device}: "
              f"{args.steps} steps of batch {args.batch}, last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
