"""Shared pieces of the Python tests: where the project and MNIST are, and
small nets written to temporary files."""
import os
import sys

import numpy as np
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


def random_detector_weights(model, path, seed, conf_gain):
    """Random weights for the detectors in models/ssd and models/faster_rcnn:
    He-scaled convolutions (the first one for pixels minus a mean, the
    heads' as given: confidences spread enough to pass the threshold, yet
    short of softmax's saturation at 1), BatchNorm statistics and Scale near the
    identity, Normalize's scale near SSD's 20; saved to `path`."""
    import caffe  # here: not every test that loads this file imports the package
    net = caffe.Net(model, caffe.TEST)
    rng = np.random.RandomState(seed)
    for name, blobs in net.params.items():
        kind = net.layer_dict[name].type
        if kind in ("Convolution", "InnerProduct"):
            weight = blobs[0].data
            fan_in = np.prod(weight.shape[1:])
            gain = (conf_gain if name.endswith(("mbox_conf", "cls_score")) else
                    0.25 if name.endswith(("mbox_loc", "bbox_pred")) else np.sqrt(2.0))
            if any(b == "data" or b.startswith("data_") for b in net.bottom_names[name]):
                gain /= 64.0  # pixels minus the mean: tens, not ones
            weight[...] = rng.normal(0, gain / np.sqrt(fan_in), weight.shape)
            if len(blobs) > 1:
                blobs[1].data[...] = rng.normal(0, 0.1, blobs[1].data.shape)
        elif kind == "BatchNorm":
            blobs[0].data[...] = rng.normal(0, 0.1, blobs[0].data.shape)
            blobs[1].data[...] = rng.uniform(0.5, 1.5, blobs[1].data.shape)
            blobs[2].data[...] = 1.0
        elif kind == "Scale":
            blobs[0].data[...] = rng.uniform(0.8, 1.2, blobs[0].data.shape)
            blobs[1].data[...] = rng.normal(0, 0.1, blobs[1].data.shape)
        elif kind == "Normalize":
            blobs[0].data[...] = rng.uniform(15, 25, blobs[0].data.shape)
        else:
            raise AssertionError("no random weights for %s (%s)" % (name, kind))
    net.save(path)
