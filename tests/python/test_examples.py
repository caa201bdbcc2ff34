"""The Python examples (examples/python/*.py), each run as a script at a
small size, checked on the numbers they print and the files they write.
LeNet is trained once (mnist_python_data_layer.py) for the whole session;
the other examples start from its weights."""
import os
import re
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest
from google.protobuf import text_format
from PIL import Image

import caffe
from caffe.proto import caffe_pb2
from conftest import BUILD_DIR, SOURCE_DIR, mnist_dir

EXAMPLES = os.path.join(SOURCE_DIR, "examples", "python")
IMAGES = os.path.join(SOURCE_DIR, "..", "shared", "data", "images")
sys.path.insert(0, EXAMPLES)
import mnist_files  # noqa: E402  (the examples' MNIST reader)


def run_example(script, *args):
    """Runs examples/python/<script> with this interpreter; returns its stdout."""
    env = dict(os.environ, MNIST_DIR=mnist_dir())
    stage = os.path.join(BUILD_DIR, "python")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (stage, env.get("PYTHONPATH")) if p)
    command = [sys.executable, os.path.join(EXAMPLES, script)] + [str(a) for a in args]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, "%s failed:\n%s\n%s" % (script, result.stdout,
                                                          result.stderr[-4000:])
    return result.stdout


def number_after(label, text):
    """The number printed after `label` (the first such line)."""
    match = re.search(re.escape(label) + r"\s*([-+0-9.eE]+)", text)
    assert match, "no '%s' in the output:\n%s" % (label, text)
    return float(match.group(1))


def read_net(path):
    net = caffe_pb2.NetParameter()
    with open(path, "rb") as f:
        net.ParseFromString(f.read())
    return net


@pytest.fixture(scope="session")
def trained_lenet(tmp_path_factory):
    """Example 1 run once: 300 iterations of batch 64, tested on 500 images.
    Returns (its output folder, its stdout)."""
    out = tmp_path_factory.mktemp("lenet_python_data")
    stdout = run_example("mnist_python_data_layer.py", "--out", out, "--iters", 300,
                         "--display", 10, "--test_batches", 5, "--seed", 1)
    return out, stdout


@pytest.fixture(scope="session")
def lenet_weights(trained_lenet):
    return os.path.join(trained_lenet[0], "lenet_python_data.caffemodel")


def test_mnist_python_data_layer_trains_lenet(trained_lenet, lenet_weights):
    out, stdout = trained_lenet
    losses = [float(v) for v in re.findall(r"iteration \d+: loss ([0-9.]+)", stdout)]
    assert len(losses) == 30, stdout
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses
    assert number_after("test accuracy:", stdout) >= 0.90, stdout
    assert "(500 images)" in stdout

    # The net it wrote: LeNet's layers, its data from the Python layer in both phases.
    net = caffe_pb2.NetParameter()
    with open(os.path.join(out, "lenet_python_data.prototxt")) as f:
        text_format.Merge(f.read(), net)
    data_layers = [layer for layer in net.layer if layer.type == "Python"]
    assert [layer.python_param.layer for layer in data_layers] == ["MnistDataLayer"] * 2
    assert {layer.include[0].phase for layer in data_layers} == {caffe.TRAIN, caffe.TEST}
    assert [layer.name for layer in net.layer if layer.type != "Python"] == [
        "conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "accuracy", "loss"]

    # The saved weights are the trained ones: LeNet's deploy net classifies with them.
    deploy = caffe.Net(os.path.join(SOURCE_DIR, "models", "lenet", "lenet.prototxt"),
                       caffe.TEST, weights=lenet_weights)
    images, labels = mnist_files.load("test", mnist_dir())
    probs = deploy.forward(data=images[-64:, np.newaxis] / 256.0)["prob"]
    assert np.mean(probs.argmax(axis=1) == labels[-64:]) >= 0.9


def test_finetune_new_labels_beats_training_from_scratch(tmp_path, lenet_weights):
    stdout = run_example("finetune_new_labels.py", "--weights", lenet_weights, "--out", tmp_path,
                         "--task", "pairs", "--iters", 40, "--display", 10,
                         "--train_images", 1000, "--test_images", 500)
    assert "finetuned: copied conv1, conv2, ip1; newly initialized: ip2_pairs" in stdout
    assert len(re.findall(r"finetuned iteration \d+: loss", stdout)) == 4
    assert len(re.findall(r"scratch iteration \d+: loss", stdout)) == 4
    finetuned = number_after("fine-tuned accuracy:", stdout)
    scratch = number_after("from-scratch accuracy:", stdout)
    assert finetuned >= 0.8, stdout  # 5 labels: chance is 0.2
    assert finetuned > scratch + 0.05, stdout
    # The fine-tuned weights hold the new last layer with 5 outputs.
    layers = {layer.name: layer for layer in read_net(tmp_path / "finetuned.caffemodel").layer}
    assert list(layers["ip2_pairs"].blobs[0].shape.dim) == [5, 500]
    assert "ip2" not in layers


def argmax_map(stdout):
    rows = stdout.split("argmax map:\n")[1].split("\n")
    return np.array([[int(d) for d in row.split()] for row in rows
                     if re.fullmatch(r"\s+[0-9 ]+", row)])


def test_net_surgery_makes_lenet_convolutional(tmp_path, lenet_weights):
    stdout = run_example("net_surgery.py", "--weights", lenet_weights, "--out", tmp_path)
    assert number_after("max abs difference of ip2 on 28x28:", stdout) < 1e-4
    assert number_after("max abs difference of prob on 28x28:", stdout) < 1e-4
    assert "score map shape: (1, 10, 8, 8)" in stdout
    scores = argmax_map(stdout)
    assert scores.shape == (8, 8)
    # The digits' 28x28 windows start at map cells 0 and 7 (stride 4).
    _, labels = mnist_files.load("test", mnist_dir())
    corners = [scores[0, 0], scores[0, 7], scores[7, 0], scores[7, 7]]
    assert corners == labels[:4].tolist()
    conv_weights = {layer.name: layer for layer in
                    read_net(tmp_path / "lenet_full_conv.caffemodel").layer}
    assert list(conv_weights["ip1-conv"].blobs[0].shape.dim) == [500, 50, 4, 4]
    assert list(conv_weights["ip2-conv"].blobs[0].shape.dim) == [10, 500, 1, 1]


def test_net_surgery_with_random_weights_on_a_larger_mosaic(tmp_path):
    stdout = run_example("net_surgery.py", "--out", tmp_path, "--grid", 3)
    assert "no --weights" in stdout
    assert number_after("max abs difference of ip2 on 28x28:", stdout) < 1e-4
    assert "score map shape: (1, 10, 15, 15)" in stdout  # (84 - 28) / 4 + 1
    assert argmax_map(stdout).shape == (15, 15)


def predictions(stdout):
    """{image name: (sum of its probabilities, [(probability, class, name), ...])}."""
    found = {}
    for block in re.split(r"^image ", stdout, flags=re.M)[1:]:
        header, *lines = block.split("\n")
        name, total = re.fullmatch(r"(\S+) \(probabilities sum to ([0-9.]+)\)", header).groups()
        ranks = [re.fullmatch(r"\s+\d+\. ([0-9.]+)\s+(\d+)\s*(.*)", line) for line in lines]
        ranks = [(float(m.group(1)), int(m.group(2)), m.group(3)) for m in ranks if m]
        found[name] = (float(total), ranks)
    return found


def test_classification_with_trained_lenet_on_digit_images(tmp_path, lenet_weights):
    images, labels = mnist_files.load("test", mnist_dir())
    paths = []
    for i in range(100, 110):
        paths.append(tmp_path / ("digit%d.png" % i))
        Image.fromarray(images[i]).save(paths[-1])
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    (tmp_path / "labels.txt").write_text("\n".join(names) + "\n")
    out = tmp_path / "out"
    stdout = run_example("classification.py", "--model",
                         os.path.join(SOURCE_DIR, "models", "lenet", "lenet.prototxt"),
                         "--weights", lenet_weights, "--labels", tmp_path / "labels.txt",
                         "--mean", "none", "--input_scale", 1 / 256.0, "--top_k", 3,
                         "--out", out, "--images", *paths)
    assert "prob: (10, 10)" in stdout
    found = predictions(stdout)
    assert len(found) == 10
    top1 = [found["digit%d.png" % i][1][0] for i in range(100, 110)]
    assert all(name == names[label] for _, label, name in top1)
    correct = sum(label == true for (_, label, _), true in zip(top1, labels[100:110]))
    assert correct >= 8, (top1, labels[100:110])
    assert all(abs(total - 1) < 1e-3 for total, _ in found.values())
    assert "conv1      (20, 1, 5, 5)  (20,)" in stdout
    for picture in ("conv1_filters.png", "conv1_feature_maps.png"):
        assert (out / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_classification_with_caffenet_and_random_weights(tmp_path):
    cat = os.path.join(IMAGES, "cat.jpg")
    assert os.path.exists(cat), "cat.jpg not found in ../shared/data/images"
    stdout = run_example("classification.py", "--images", cat, "--out", tmp_path)
    assert "no --weights" in stdout
    assert "prob: (1, 1000)" in stdout
    total, ranks = predictions(stdout)["cat.jpg"]
    assert abs(total - 1) < 1e-3
    assert len(ranks) == 5
    probs = [p for p, _, _ in ranks]
    assert probs == sorted(probs, reverse=True) and 0 < probs[-1] <= probs[0] < 1
    assert "data       (1, 3, 227, 227)" in stdout
    assert "conv1      (1, 96, 55, 55)" in stdout
    assert "fc6        (4096, 9216)  (4096,)" in stdout
    filters = matplotlib.image.imread(str(tmp_path / "conv1_filters.png"))
    assert filters.ndim == 3 and min(filters.shape[:2]) > 100
    assert (tmp_path / "conv1_feature_maps.png").stat().st_size > 1000
