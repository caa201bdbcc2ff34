"""Shared pieces of the Python tests: where the project and MNIST are, and
small nets written to temporary files."""
import os
import sys

import pytest

SOURCE_DIR = os.environ.get("DLCAFFE_SOURCE_DIR",
                            os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("DLCAFFE_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))


def mnist_dir():
    """The four MNIST files (gzipped or not): $MNIST_DIR, else ../shared/data/mnist."""
    for candidate in (os.environ.get("MNIST_DIR"),
                      os.path.join(SOURCE_DIR, "..", "shared", "data", "mnist")):
        if candidate and any(os.path.exists(os.path.join(candidate, name))
                             for name in ("train-images-idx3-ubyte",
                                          "train-images-idx3-ubyte.gz")):
            return candidate
    pytest.fail("MNIST not found: set MNIST_DIR or put it in ../shared/data/mnist")


@pytest.fixture
def write_file(tmp_path):
    """write_file(name, text) -> path of a new file in the test's folder."""
    def write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


# A linear net with a Euclidean loss: y = W x + b against a target.
LINEAR_NET = """
name: "linear"
layer { name: "x" type: "Input" top: "x" top: "target"
        input_param { shape { dim: 5 dim: 3 } shape { dim: 5 dim: 2 } } }
layer { name: "fc" type: "InnerProduct" bottom: "x" top: "y"
        inner_product_param { num_output: 2
          weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "constant" value: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "loss" }
"""
