"""caffe.Classifier and caffe.Detector on a linear net (InnerProduct with
known weights): predictions against the same steps done by hand (resize,
the ten crops or the center crop, transpose, channel swap, raw scale,
mean, input scale, W x + b, the average over crops), windows with and
without context padding."""
import numpy as np
import pytest
from PIL import Image

import caffe

CHANNELS, CROP_H, CROP_W, OUTPUTS = 3, 4, 5, 2
DEPLOY = """
name: "linear"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: %d dim: %d dim: %d dim: %d } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "score"
        inner_product_param { num_output: %d } }
"""
MEAN = np.array([0.1, 0.2, 0.3])
RAW_SCALE, INPUT_SCALE, SWAP = 2.0, 0.5, (2, 1, 0)


@pytest.fixture
def linear_model(write_file, tmp_path):
    """(deploy prototxt, weights, W, b) of score = W data + b, batch 4,
    inputs C x H x W with `size` (square for the detector)."""
    def make(height=CROP_H, width=CROP_W):
        model = write_file("deploy_%dx%d.prototxt" % (height, width),
                           DEPLOY % (4, CHANNELS, height, width, OUTPUTS))
        rng = np.random.RandomState(3)
        weights = rng.uniform(-1, 1, (OUTPUTS, CHANNELS * height * width)).astype(np.float32)
        bias = np.array([0.5, -0.25], dtype=np.float32)
        net = caffe.Net(model, caffe.TEST)
        net.params["ip"][0].data[...] = weights
        net.params["ip"][1].data[...] = bias
        path = str(tmp_path / ("linear_%dx%d.caffemodel" % (height, width)))
        net.save(path)
        return model, path, weights, bias
    return make


def by_hand(crop, weights, bias):
    """The net's input and output for one H x W x C crop, step by step."""
    x = crop.transpose(2, 0, 1)[list(SWAP)] * RAW_SCALE
    x = (x - MEAN[:, None, None]) * INPUT_SCALE
    return weights @ x.ravel() + bias


def test_classifier_predict(linear_model):
    model, weights_file, weights, bias = linear_model()
    classifier = caffe.Classifier(model, weights_file, image_dims=(6, 7), mean=MEAN,
                                  input_scale=INPUT_SCALE, raw_scale=RAW_SCALE,
                                  channel_swap=SWAP)
    assert isinstance(classifier, caffe.Net)
    assert list(classifier.crop_dims) == [CROP_H, CROP_W]
    rng = np.random.RandomState(5)
    images = [rng.uniform(0, 1, (3, 4, CHANNELS)).astype(np.float32) for _ in range(3)]
    resized = [caffe.io.resize_image(im, (6, 7)) for im in images]

    # Ten crops (20 and more items: several batches of 4), averaged.
    predictions = classifier.predict(images)
    assert predictions.shape == (3, OUTPUTS)
    starts = [(0, 0), (0, 2), (2, 0), (2, 2), (1, 1)]  # corners, center int(3 - 2), int(3.5 - 2.5)
    for image, prediction in zip(resized, predictions):
        crops = [image[r:r + CROP_H, c:c + CROP_W] for r, c in starts]
        crops += [crop[:, ::-1] for crop in crops]
        expected = np.mean([by_hand(crop, weights, bias) for crop in crops], axis=0)
        np.testing.assert_allclose(prediction, expected, rtol=1e-4, atol=1e-4)

    # The center crop only.
    center = classifier.predict(images, oversample=False)
    assert center.shape == (3, OUTPUTS)
    for image, prediction in zip(resized, center):
        expected = by_hand(image[1:1 + CROP_H, 1:1 + CROP_W], weights, bias)
        np.testing.assert_allclose(prediction, expected, rtol=1e-4, atol=1e-4)

    # Without image_dims, images are resized to the crop size itself.
    plain = caffe.Classifier(model, weights_file)
    assert list(plain.image_dims) == [CROP_H, CROP_W]
    image = rng.uniform(0, 1, (CROP_H, CROP_W, CHANNELS)).astype(np.float32)
    expected = weights @ image.transpose(2, 0, 1).ravel() + bias
    np.testing.assert_allclose(plain.predict([image], oversample=False)[0], expected,
                               rtol=1e-4, atol=1e-4)


def test_detector_windows(linear_model, tmp_path):
    model, weights_file, weights, bias = linear_model(8, 8)
    pixels = np.random.RandomState(7).randint(0, 256, (20, 18, 3)).astype(np.uint8)
    image_file = str(tmp_path / "image.png")
    Image.fromarray(pixels).save(image_file)
    image = pixels / np.float32(255)

    detector = caffe.Detector(model, weights_file, mean=MEAN, input_scale=INPUT_SCALE,
                              raw_scale=RAW_SCALE, channel_swap=SWAP)
    assert list(detector.crop_dims) == [8, 8, CHANNELS]
    windows = [np.array([2, 3, 10, 11]), np.array([0, 0, 20, 18]), np.array([5, 1, 9, 16])]
    detections = detector.detect_windows([(image_file, windows[:2]), (image_file, windows[2:])])
    assert [d["filename"] for d in detections] == [image_file] * 3
    for window, detection in zip(windows, detections):
        assert detection["window"] is window
        crop = image[window[0]:window[2], window[1]:window[3]]
        crop = caffe.io.resize_image(crop, (8, 8))  # warped to the input size
        np.testing.assert_allclose(detection["prediction"], by_hand(crop, weights, bias),
                                   rtol=1e-4, atol=1e-4)
    with pytest.raises(NotImplementedError, match="detect_windows"):
        detector.detect_selective_search([image_file])


def test_detector_context_padding(linear_model):
    model, weights_file, _, _ = linear_model(8, 8)
    detector = caffe.Detector(model, weights_file, mean=MEAN, raw_scale=RAW_SCALE,
                              channel_swap=SWAP, context_pad=2)
    # The mean in image space: channels back in image order, before the raw scale.
    np.testing.assert_allclose(detector.crop_mean.reshape(-1), MEAN[::-1] / RAW_SCALE)
    image = np.random.RandomState(9).uniform(0, 1, (20, 20, 3)).astype(np.float32)
    # Input 8, pad 2: the window grows by 8 / (8 - 4) = 2 around its center.
    # (4, 4, 11, 11): half 4, center 8 -> box (0, 0, 16, 16), all inside.
    inside = detector.crop(image, np.array([4, 4, 11, 11]))
    np.testing.assert_allclose(inside, caffe.io.resize_image(image[0:16, 0:16], (8, 8)),
                               atol=1e-6)
    # (0, 0, 7, 7): box (-4, -4, 12, 12); 4 rows/columns outside are
    # round(4 * 8 / 17) = 2 input pixels of mean; the image part (0..12)
    # becomes round(13 * 8 / 17) = 6 pixels.
    corner = detector.crop(image, np.array([0, 0, 7, 7]))
    assert corner.shape == (8, 8, 3)
    np.testing.assert_allclose(corner[2:, 2:], caffe.io.resize_image(image[0:12, 0:12], (6, 6)),
                               atol=1e-6)
    fill = MEAN[::-1] / RAW_SCALE
    np.testing.assert_allclose(corner[:2].reshape(-1, 3), np.tile(fill, (16, 1)), atol=1e-6)
    np.testing.assert_allclose(corner[:, :2].reshape(-1, 3), np.tile(fill, (16, 1)), atol=1e-6)
