"""Reading MNIST's four idx files (gzipped or not) into numpy arrays.

Shared by the Python examples:

    import mnist_files
    images, labels = mnist_files.load("train", mnist_files.find_dir(args.mnist_dir))
    # images: uint8 (60000, 28, 28), labels: uint8 (60000,)

The folder is taken from the argument, else $MNIST_DIR, else
../shared/data/mnist next to the repository.
"""
import gzip
import os

import numpy as np

REPO_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def find_dir(mnist_dir=None):
    """The folder holding the MNIST files: mnist_dir, else $MNIST_DIR, else
    ../shared/data/mnist relative to the repository."""
    for candidate in (mnist_dir, os.environ.get("MNIST_DIR"),
                      os.path.join(REPO_DIR, "..", "shared", "data", "mnist")):
        if candidate and _path(candidate, FILES["train"][0]):
            return os.path.abspath(candidate)
    raise FileNotFoundError("MNIST not found: pass --mnist_dir, set MNIST_DIR or put the "
                            "four idx files (optionally .gz) in ../shared/data/mnist")


def _path(folder, name):
    """The file `name` or `name`.gz in folder, or None."""
    for candidate in (name, name + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            return path
    return None


def _read_idx(path, expected_dims):
    """An idx file's array. Its header: two zero bytes, the element type
    (0x08 = uint8), the number of dimensions, then each dimension as a
    big-endian int32."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[:3] != b"\x00\x00\x08" or raw[3] != expected_dims:
        raise ValueError("%s is not a uint8 idx file of %d dimensions" % (path, expected_dims))
    shape = tuple(np.frombuffer(raw, dtype=">i4", count=expected_dims, offset=4))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * expected_dims)
    return data.reshape(shape)


def load(split, mnist_dir=None):
    """(images, labels) of split 'train' or 'test': uint8 arrays of shapes
    (N, 28, 28) and (N,)."""
    if split not in FILES:
        raise ValueError("split must be 'train' or 'test', not %r" % (split,))
    folder = find_dir(mnist_dir)
    image_name, label_name = FILES[split]
    images = _read_idx(_path(folder, image_name), 3)
    labels = _read_idx(_path(folder, label_name), 1)
    if len(images) != len(labels):
        raise ValueError("%s: %d images but %d labels" % (folder, len(images), len(labels)))
    return images, labels
