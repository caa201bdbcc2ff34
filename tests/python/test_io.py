"""caffe.io: Transformer against explicit numpy steps (pycaffe's order) on
odd shapes, its checks, load_image, resize_image, oversample's exact crops,
and the BlobProto / BlobProtoVector / Datum conversions."""
import numpy as np
import pytest
from PIL import Image

import caffe
from caffe.proto import caffe_pb2


def random_image(shape, seed=0):
    return np.random.RandomState(seed).uniform(0, 1, shape).astype(np.float32)


# ---- Transformer ----

def test_preprocess_applies_each_step_in_pycaffes_order():
    image = random_image((5, 7, 3))
    mean = np.array([10.0, 20.0, 30.0])
    t = caffe.io.Transformer({"data": (1, 3, 5, 7)})
    t.set_transpose("data", (2, 0, 1))
    t.set_channel_swap("data", (2, 0, 1))
    t.set_raw_scale("data", 255.0)
    t.set_mean("data", mean)
    t.set_input_scale("data", 0.5)
    before = image.copy()
    out = t.preprocess("data", image)
    chw = image.transpose(2, 0, 1)[[2, 0, 1]]
    expected = (chw * 255.0 - mean[:, None, None]) * 0.5
    assert out.shape == (3, 5, 7) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(image, before)  # the caller's array is left alone
    # deprocess undoes it all, back to H x W x C.
    np.testing.assert_allclose(t.deprocess("data", out[np.newaxis]), image, atol=1e-5)


def test_preprocess_with_a_full_mean_and_without_steps():
    image = random_image((3, 4, 2), seed=1)
    mean = random_image((2, 3, 4), seed=2)
    t = caffe.io.Transformer({"x": (4, 2, 3, 4)})
    t.set_transpose("x", (2, 0, 1))
    t.set_mean("x", mean)
    np.testing.assert_allclose(t.preprocess("x", image), image.transpose(2, 0, 1) - mean,
                               atol=1e-6)
    # No steps set: the image unchanged (as float32; its H x W is the input's).
    plain = caffe.io.Transformer({"x": (4, 2, 3, 4)})
    out = plain.preprocess("x", image.astype(np.float64))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, image)


def test_preprocess_resizes_to_the_inputs_spatial_size():
    image = np.array([[0.0, 1.0], [0.5, 0.25]], dtype=np.float32)[:, :, None].repeat(3, 2)
    image[:, :, 1] *= 0.5
    t = caffe.io.Transformer({"data": (1, 3, 4, 4)})
    t.set_transpose("data", (2, 0, 1))
    out = t.preprocess("data", image)
    assert out.shape == (3, 4, 4)
    np.testing.assert_allclose(out, caffe.io.resize_image(image, (4, 4)).transpose(2, 0, 1))


def test_transformer_checks():
    t = caffe.io.Transformer({"data": (1, 3, 5, 7)})
    with pytest.raises(Exception, match="not one of the net inputs"):
        t.set_raw_scale("nope", 2.0)
    with pytest.raises(Exception, match="not one of the net inputs"):
        t.preprocess("nope", random_image((5, 7, 3)))
    with pytest.raises(Exception, match="Transpose order"):
        t.set_transpose("data", (1, 0))
    with pytest.raises(Exception, match="Channel swap"):
        t.set_channel_swap("data", (1, 0))
    with pytest.raises(ValueError, match="^Mean channels incompatible with input.$"):
        t.set_mean("data", np.zeros(4))
    with pytest.raises(ValueError, match="^Mean shape incompatible with input shape.$"):
        t.set_mean("data", np.zeros((3, 5, 6)))
    with pytest.raises(ValueError, match="^Mean shape invalid$"):
        t.set_mean("data", np.zeros((1, 3, 5, 7)))
    with pytest.raises(ValueError, match="^Mean shape incompatible with input shape.$"):
        t.set_mean("data", np.zeros((5, 7)))  # H x W is 1 x H x W: one channel only
    gray = caffe.io.Transformer({"data": (1, 1, 5, 7)})
    gray.set_mean("data", np.zeros((5, 7)))
    assert gray.mean["data"].shape == (5, 7)
    t.set_mean("data", np.array([1.0, 2.0, 3.0]))
    assert t.mean["data"].shape == (3, 1, 1)


# ---- images ----

def test_load_image(tmp_path):
    rgb = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3) * 4
    Image.fromarray(rgb).save(tmp_path / "rgb.png")
    image = caffe.io.load_image(str(tmp_path / "rgb.png"))
    assert image.dtype == np.float32 and image.shape == (4, 5, 3)
    np.testing.assert_allclose(image, rgb / 255.0, atol=1e-6)

    gray = np.array([[0, 51], [102, 255]], dtype=np.uint8)
    Image.fromarray(gray).save(tmp_path / "gray.png")
    color = caffe.io.load_image(str(tmp_path / "gray.png"))
    assert color.shape == (2, 2, 3)
    for c in range(3):
        np.testing.assert_allclose(color[:, :, c], gray / 255.0, atol=1e-6)
    single = caffe.io.load_image(str(tmp_path / "gray.png"), color=False)
    assert single.shape == (2, 2, 1)
    np.testing.assert_allclose(single[:, :, 0], gray / 255.0, atol=1e-6)

    rgba = np.concatenate([rgb, np.full((4, 5, 1), 7, np.uint8)], axis=2)
    Image.fromarray(rgba, "RGBA").save(tmp_path / "rgba.png")
    dropped = caffe.io.load_image(str(tmp_path / "rgba.png"))
    assert dropped.shape == (4, 5, 3)
    np.testing.assert_allclose(dropped, rgb / 255.0, atol=1e-6)


def test_resize_image():
    # Nearest neighbour doubling repeats each pixel as a 2 x 2 block, for
    # skimage's 3-channel path (values outside [0, 1] too) and scipy's other.
    for channels in (3, 2):
        image = (np.arange(4 * channels, dtype=np.float32).reshape(2, 2, channels) - 3) * 10
        out = caffe.io.resize_image(image, (4, 4), interp_order=0)
        assert out.shape == (4, 4, channels) and out.dtype == np.float32
        np.testing.assert_allclose(out, image.repeat(2, 0).repeat(2, 1), atol=1e-4)
    constant = np.full((3, 5, 1), 0.25, dtype=np.float32)
    out = caffe.io.resize_image(constant, (7, 2))
    assert out.shape == (7, 2, 1)
    np.testing.assert_array_equal(out, 0.25)


def test_oversample_takes_corners_center_and_their_mirrors():
    images = [np.arange(6 * 7 * 2, dtype=np.float32).reshape(6, 7, 2) + 1000 * k
              for k in range(2)]
    crops = caffe.io.oversample(images, (3, 4))
    assert crops.shape == (20, 3, 4, 2) and crops.dtype == np.float32
    # (row, column) of each crop's top-left pixel: corners, then the center
    # (3 - 1.5, 3.5 - 2) truncated.
    starts = [(0, 0), (0, 3), (3, 0), (3, 3), (1, 1)]
    for k, image in enumerate(images):
        for i, (r, c) in enumerate(starts):
            window = image[r:r + 3, c:c + 4]
            np.testing.assert_array_equal(crops[10 * k + i], window)
            np.testing.assert_array_equal(crops[10 * k + 5 + i], window[:, ::-1])
    assert crops[1][0, 0, 0] == images[0][0, 3, 0]
    assert crops[5][0, 0, 0] == images[0][0, 3, 0]  # mirrored top-left corner


# ---- protobuf messages ----

def test_blobproto_shapes():
    values = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 8
    blob = caffe.io.array_to_blobproto(values, diff=-values)
    assert list(blob.shape.dim) == [2, 3, 4]
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(blob), values)
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(blob, return_diff=True), -values)

    legacy = caffe_pb2.BlobProto(num=1, channels=2, height=1, width=3)
    legacy.data.extend([1, 2, 3, 4, 5, 6])
    assert caffe.io.blobproto_to_array(legacy).shape == (1, 2, 1, 3)

    scalar = caffe_pb2.BlobProto()
    scalar.data.append(123)
    assert caffe.io.blobproto_to_array(scalar) == 123
    unshaped = caffe_pb2.BlobProto()
    unshaped.data.extend([1, 2])
    with pytest.raises(ValueError):
        caffe.io.blobproto_to_array(unshaped)
    with pytest.raises(ValueError):
        caffe.io.array_to_blobproto(values, diff=np.zeros(3))


def test_blobprotovector_round_trip():
    arrays = [np.array([[1.5, -2.0]]), np.arange(6.0).reshape(1, 2, 3), np.array([0.1])]
    data = caffe.io.arraylist_to_blobprotovector_str(arrays)
    assert isinstance(data, bytes)
    vector = caffe_pb2.BlobProtoVector.FromString(data)
    assert len(vector.blobs) == 3
    back = caffe.io.blobprotovector_str_to_arraylist(data)
    for a, b in zip(arrays, back):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a.astype(np.float32))  # stored as float32


def test_datum_round_trips():
    pixels = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4) * 10
    datum = caffe.io.array_to_datum(pixels, label=7)
    assert (datum.channels, datum.height, datum.width, datum.label) == (2, 3, 4, 7)
    assert datum.data == pixels.tobytes() and len(datum.float_data) == 0
    back = caffe.io.datum_to_array(caffe_pb2.Datum.FromString(datum.SerializeToString()))
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, pixels)

    floats = (np.arange(12, dtype=np.float32).reshape(3, 2, 2) - 5) / 4
    datum = caffe.io.array_to_datum(floats)
    assert datum.data == b"" and list(datum.float_data) == list(floats.flat)
    assert not datum.HasField("label")
    back = caffe.io.datum_to_array(datum)
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, floats)

    with pytest.raises(ValueError):
        caffe.io.array_to_datum(np.zeros((2, 2)))
