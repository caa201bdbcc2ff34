"""Agreement with OpenCV's DNN module (cv2.dnn.readNetFromCaffe, Debian's
python3-opencv 4.6) on Caffe SSD nets: models/ssd's two deploy prototxts
with random weights (saved by dlcaffe as a .caffemodel that both read), a
photo through blobFromImage, the same detections — labels and order equal,
boxes and scores within 1e-4 relative. Random weights put scores close
together: two detections whose scores are nearer than the two runtimes can
agree on would make the order a coin toss, so the test first checks that
the scores it compares are far enough apart to order (else it fails, saying
so: the weights' seed needs changing, not the bound)."""
import os

import numpy as np
import pytest

import caffe
from conftest import SOURCE_DIR, random_detector_weights

try:
    import cv2
except ImportError:  # CI installs python3-opencv (scripts/install_deps.sh)
    cv2 = None

pytestmark = pytest.mark.skipif(cv2 is None and not os.environ.get("CI"),
                                reason="python3-opencv is not installed")

PHOTO = os.path.join(SOURCE_DIR, "..", "shared", "data", "images", "fish-bike.jpg")
MODELS = os.path.join(SOURCE_DIR, "models", "ssd")


def detections_of_opencv(model, weights, blob):
    net = cv2.dnn.readNetFromCaffe(model, weights)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    net.setInput(blob)
    return net.forward().reshape(-1, 7)


def detections_of_dlcaffe(model, weights, blob):
    net = caffe.Net(model, weights, caffe.TEST)
    net.blobs["data"].data[...] = blob
    return net.forward()["detection_out"].reshape(-1, 7).copy()


# The confidence heads' gain: 2 classes with a threshold of 0.01, 21 with
# 0.25 (logits spread enough that some class passes it).
@pytest.mark.parametrize("model,seed,conf_gain", [("res10_300x300_deploy.prototxt", 1, 0.25),
                                                  ("mobilenet_ssd_deploy.prototxt", 2, 2.0)])
def test_ssd_detections_agree_with_opencv(model, seed, conf_gain, tmp_path):
    assert cv2 is not None, "python3-opencv is missing: scripts/install_deps.sh installs it"
    model = os.path.join(MODELS, model)
    weights = str(tmp_path / "weights.caffemodel")
    random_detector_weights(model, weights, seed, conf_gain)
    image = cv2.imread(PHOTO)
    assert image is not None, PHOTO
    blob = cv2.dnn.blobFromImage(image, 1.0, (300, 300), (104.0, 177.0, 123.0))
    ours = detections_of_dlcaffe(model, weights, blob)
    theirs = detections_of_opencv(model, weights, blob)
    # OpenCV 4.6 pads its top with all-zero rows up to keep_top_k, and
    # orders an image's rows by score over all labels where keep_top_k cut
    # them (the fork, and dlcaffe, by label, then score): compare by image,
    # label, then score.
    theirs = theirs[~np.all(theirs == 0, axis=1)]
    assert len(ours) >= 10, "too few detections to compare: %d" % len(ours)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    ours = ours[np.lexsort((-ours[:, 2], ours[:, 1], ours[:, 0]))]
    theirs = theirs[np.lexsort((-theirs[:, 2], theirs[:, 1], theirs[:, 0]))]
    # Within a label the rows go by score: neighbours must be further apart
    # than the runtimes' scores differ (4e-7 at most, measured) for the order
    # to be defined.
    for label in np.unique(ours[:, 1]):
        gaps = -np.diff(ours[ours[:, 1] == label, 2])
        assert gaps.size == 0 or gaps.min() > 2e-6, \
            "label %d has scores %.3g apart: pick another seed" % (label, gaps.min())
    np.testing.assert_array_equal(ours[:, :2], theirs[:, :2])  # image, label
    np.testing.assert_allclose(ours[:, 2:], theirs[:, 2:], rtol=1e-4, atol=1e-5)


def faster_rcnn_outputs(model, weights, blob, info):
    """(dlcaffe's rois, cls_prob, bbox_pred), OpenCV's, and the number of
    OpenCV's regions (it pads them with zero rows to post_nms_topn)."""
    net = caffe.Net(model, weights, caffe.TEST)
    net.blobs["data"].data[...] = blob
    net.blobs["im_info"].data[...] = info
    net.forward()
    ours = [net.blobs[name].data.copy() for name in ("rois", "cls_prob", "bbox_pred")]
    theirs_net = cv2.dnn.readNetFromCaffe(model, weights)
    theirs_net.setInput(blob, "data")
    theirs_net.setInput(info, "im_info")
    theirs = [o.reshape(o.shape[0], -1) for o in theirs_net.forward(["proposal", "cls_prob", "bbox_pred"])]
    regions = int(np.sum(~np.all(theirs[0] == 0, axis=1)))
    assert np.all(theirs[0][regions:] == 0), "OpenCV's zero rows are not all at the end"
    return ours, [o[:regions] for o in theirs]


def expect_same_outputs(ours, theirs):
    """Regions, class probabilities, box deltas. A region's corner is the
    difference of a centre and a half-width of up to ~1000 pixels, which the
    two compute in other orders: 16 float32 ulps of 1024 (2e-3 pixels; 4.6e-4
    measured) bound it: 7e-6 of the image's width."""
    np.testing.assert_allclose(ours[0], theirs[0], rtol=0, atol=16 * 1024 * 2.0 ** -23)
    for mine, other in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(mine, other, rtol=1e-4, atol=1e-5)


def test_faster_rcnn_agrees_with_opencv(tmp_path):
    """models/faster_rcnn's net (the Proposal layer, ROIPooling, the Fast
    R-CNN head) with random weights: the same regions in the same order, and
    the same class probabilities and box deltas for each. OpenCV 4.6's
    Proposal keeps regions smaller than min_size (py-faster-rcnn's
    _filter_boxes drops them, and dlcaffe with it): with min_size 0 the two
    agree wholly; with the default 16, dlcaffe's regions are OpenCV's
    without those."""
    assert cv2 is not None, "python3-opencv is missing: scripts/install_deps.sh installs it"
    model = os.path.join(SOURCE_DIR, "models", "faster_rcnn", "test.prototxt")
    weights = str(tmp_path / "weights.caffemodel")
    random_detector_weights(model, weights, 3, 1.0)
    blob = cv2.dnn.blobFromImage(cv2.imread(PHOTO), 1.0, (288, 224), (102.98, 115.95, 122.77))
    info = np.array([[224, 288, 1.0]], np.float32)

    with open(model) as f:
        text = f.read()
    unfiltered = str(tmp_path / "min_size_0.prototxt")
    with open(unfiltered, "w") as f:
        f.write(text.replace("proposal_param {", "proposal_param { min_size: 0"))
    ours, theirs = faster_rcnn_outputs(unfiltered, weights, blob, info)
    assert len(ours[0]) == len(theirs[0]) >= 50, (len(ours[0]), len(theirs[0]))
    expect_same_outputs(ours, theirs)

    ours, theirs = faster_rcnn_outputs(model, weights, blob, info)
    sides = np.minimum(theirs[0][:, 3] - theirs[0][:, 1], theirs[0][:, 4] - theirs[0][:, 2]) + 1
    large = sides >= 16
    assert 0 < np.sum(~large) and len(ours[0]) == np.sum(large) >= 50, (len(ours[0]), np.sum(large))
    expect_same_outputs(ours, [other[large] for other in theirs])


PSROI_NET = """name: "psroi"
layer { name: "map" type: "Input" top: "map"
  input_param { shape { dim: 2 dim: 98 dim: 13 dim: 17 } } }
layer { name: "rois" type: "Input" top: "rois" input_param { shape { dim: 6 dim: 5 } } }
layer { name: "psroi" type: "PSROIPooling" bottom: "map" bottom: "rois" top: "out"
  psroi_pooling_param { spatial_scale: 0.0625 output_dim: 2 group_size: 7 } }
"""


def test_psroi_pooling_agrees_with_opencv(tmp_path):
    """R-FCN's PSROIPooling (OpenCV reads it as R-FCN's prototxt writes it):
    7 x 7 bins of 2 output channels over 98 score maps at Faster R-CNN's
    stride 16, regions with fractional corners, reaching outside the map,
    thinner than a cell, of both images: the same averages."""
    assert cv2 is not None, "python3-opencv is missing: scripts/install_deps.sh installs it"
    model = str(tmp_path / "psroi.prototxt")
    with open(model, "w") as f:
        f.write(PSROI_NET)
    rng = np.random.RandomState(4)
    scores = rng.uniform(-1, 1, (2, 98, 13, 17)).astype(np.float32)
    rois = np.array([[0, 0, 0, 271, 207], [1, 37.4, 20.6, 190.2, 150.9], [0, -40, -30, 90, 300],
                     [1, 100, 60, 103, 61], [1, 200, 100, 400, 400], [0, 16, 16, 111, 95]],
                    np.float32)
    theirs_net = cv2.dnn.readNetFromCaffe(model)
    theirs_net.setInput(scores, "map")
    theirs_net.setInput(rois, "rois")
    theirs = theirs_net.forward("psroi")
    net = caffe.Net(model, caffe.TEST)
    net.blobs["map"].data[...] = scores
    net.blobs["rois"].data[...] = rois
    ours = net.forward()["out"]
    assert ours.shape == theirs.shape == (6, 2, 7, 7)
    assert np.count_nonzero(ours == 0) > 0  # the regions outside have empty bins
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
