"""examples/detection on models/ssd's res10-shaped net with random weights
(conftest.random_detector_weights) and a photo: the C++ program prints the
detections the net gives on OpenCV's resize of the image (checked against
pycaffe on the same input) and writes the image with green boxes; the
Python script prints what the net gives on caffe.io's preprocessing and
draws them too."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import caffe
from conftest import BUILD_DIR, SOURCE_DIR, random_detector_weights

MODEL = os.path.join(SOURCE_DIR, "models", "ssd", "res10_300x300_deploy.prototxt")
PHOTO = os.path.join(SOURCE_DIR, "..", "shared", "data", "images", "fish-bike.jpg")
THRESHOLD = 0.9


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ssd") / "weights.caffemodel")
    random_detector_weights(MODEL, path, 1, 0.25)
    return path


def parse(text):
    return np.array([[float(v) for v in line.split()] for line in text.strip().splitlines()])


def green_pixels(path):
    picture = np.asarray(Image.open(path).convert("RGB")).astype(int)
    return int(np.sum((picture[..., 0] == 0) & (picture[..., 1] == 255) & (picture[..., 2] == 0)))


def boxes_of_net(weights, input_blob, image_height, image_width):
    """The net's detections above the threshold for this input, as the
    examples print them (label, score, box in the image's pixels)."""
    net = caffe.Net(MODEL, weights, caffe.TEST)
    net.blobs["data"].data[...] = input_blob
    rows = net.forward()["detection_out"].reshape(-1, 7)
    rows = rows[(rows[:, 1] >= 0) & (rows[:, 2] >= THRESHOLD)]
    scale = np.array([image_width, image_height, image_width, image_height])
    return np.hstack([rows[:, 1:3], rows[:, 3:] * scale])


def test_cpp_program_prints_and_draws_the_detections(weights, tmp_path):
    cv2 = pytest.importorskip("cv2")  # CI has it (scripts/install_deps.sh)
    program = os.path.join(BUILD_DIR, "examples", "detection", "ssd_detect")
    output = str(tmp_path / "boxes.png")
    run = subprocess.run([program, "--threshold=%g" % THRESHOLD, MODEL, weights, PHOTO, output],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    printed = parse(run.stdout)
    image = cv2.imread(PHOTO)
    blob = cv2.dnn.blobFromImage(image, 1.0, (300, 300), (104.0, 117.0, 123.0))
    expected = boxes_of_net(weights, blob, *image.shape[:2])
    assert len(expected) >= 3, "too few detections above %g: %d" % (THRESHOLD, len(expected))
    np.testing.assert_allclose(printed, expected, rtol=1e-3, atol=2e-3)
    assert Image.open(output).size == (image.shape[1], image.shape[0])
    assert green_pixels(output) > 100


def test_python_script_prints_and_draws_the_detections(weights, tmp_path):
    sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "detection"))
    import ssd_detect
    output = str(tmp_path / "boxes.png")
    run = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "examples", "detection", "ssd_detect.py"),
                          MODEL, weights, PHOTO, output, "--threshold", str(THRESHOLD)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    printed = parse(run.stdout)
    image = caffe.io.load_image(PHOTO)
    net = caffe.Net(MODEL, weights, caffe.TEST)
    expected = boxes_of_net(weights, ssd_detect.preprocess(net, image, [104, 117, 123]), *image.shape[:2])
    assert len(expected) >= 3, "too few detections above %g: %d" % (THRESHOLD, len(expected))
    np.testing.assert_allclose(printed, expected, rtol=1e-3, atol=2e-3)
    assert green_pixels(output) > 100
