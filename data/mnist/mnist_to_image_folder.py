#!/usr/bin/python3
"""MNIST as an image folder, the way a user's own data usually starts out.

    mnist_to_image_folder.py MNIST_DIR OUT_DIR [--train N] [--test N]

Reads the four canonical MNIST files (idx format, gzipped as in
../shared/data/mnist or plain as in data/mnist after get_mnist.sh) and writes the first N images of each set as
PNG files, OUT_DIR/{train,test}/<digit>/<index>.png, with Caffe's list files
OUT_DIR/train.txt and OUT_DIR/test.txt ("relative/path.png LABEL" per line)
and OUT_DIR/labels.txt (one class name per line, for classify).
"""
import argparse
import gzip
import os
import struct
import sys

import numpy as np
from PIL import Image

SETS = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
        "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def find(mnist_dir, name):
    """The plain file, else its .gz."""
    for candidate in (name, name + ".gz"):
        path = os.path.join(mnist_dir, candidate)
        if os.path.isfile(path):
            return path
    sys.exit(f"mnist_to_image_folder: error: neither {name} nor {name}.gz in {mnist_dir} "
             "(run data/mnist/get_mnist.sh, or give ../shared/data/mnist)")


def read_idx(path, magic, count):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        header = f.read(4)
        if len(header) != 4 or struct.unpack(">I", header)[0] != magic:
            sys.exit(f"mnist_to_image_folder: error: {path} is not an MNIST idx file")
        dims = struct.unpack(">" + "I" * (magic & 0xFF), f.read(4 * (magic & 0xFF)))
        n = min(count, dims[0])
        size = int(np.prod(dims[1:])) if len(dims) > 1 else 1
        data = np.frombuffer(f.read(n * size), dtype=np.uint8)
        if data.size != n * size:
            sys.exit(f"mnist_to_image_folder: error: {path} is truncated")
        return data.reshape((n,) + tuple(dims[1:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mnist_dir")
    parser.add_argument("out_dir")
    parser.add_argument("--train", type=int, default=60000, help="training images to write")
    parser.add_argument("--test", type=int, default=10000, help="test images to write")
    args = parser.parse_args()
    for name, (images_file, labels_file) in SETS.items():
        count = getattr(args, name)
        paths = [find(args.mnist_dir, f) for f in (images_file, labels_file)]
        images = read_idx(paths[0], 0x803, count)
        labels = read_idx(paths[1], 0x801, count)
        lines = []
        for i, (image, label) in enumerate(zip(images, labels)):
            relative = f"{name}/{label}/{i:05d}.png"
            os.makedirs(os.path.join(args.out_dir, name, str(label)), exist_ok=True)
            Image.fromarray(image, mode="L").save(os.path.join(args.out_dir, relative))
            lines.append(f"{relative} {label}\n")
        with open(os.path.join(args.out_dir, f"{name}.txt"), "w") as f:
            f.writelines(lines)
        print(f"{name}: {len(lines)} images in {os.path.join(args.out_dir, name)}")
    with open(os.path.join(args.out_dir, "labels.txt"), "w") as f:
        f.writelines(f"{d} {NAMES[d]}\n" for d in range(10))


if __name__ == "__main__":
    main()
