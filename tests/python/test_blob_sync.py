"""When Blob.data/.diff arrays and the device buffers agree (pycaffe.py's
docstring states the rules)."""
import gc

import numpy as np
import pytest

import caffe
from conftest import LINEAR_NET


@pytest.fixture
def net(write_file):
    caffe.set_random_seed(7)
    return caffe.Net(write_file("linear.prototxt", LINEAR_NET), caffe.TRAIN)


def reference_forward(net, x):
    w = net.params["fc"][0].data
    b = net.params["fc"][1].data
    return x @ w.T + b


def test_a_write_through_the_array_reaches_the_next_forward(net):
    x = np.arange(15, dtype=np.float32).reshape(5, 3) / 10
    net.blobs["x"].data[...] = x
    net.params["fc"][0].data[...] = np.array([[1, 2, 3], [-1, 0, 1]], np.float32)
    net.forward()
    np.testing.assert_allclose(net.blobs["y"].data, reference_forward(net, x), rtol=1e-6)


def test_reading_twice_without_device_work_keeps_what_was_written(net):
    data = net.blobs["x"].data
    data[...] = 5
    # A second read must not download (that would overwrite the write).
    np.testing.assert_array_equal(net.blobs["x"].data, 5)
    assert net.blobs["x"].data.base is data.base  # the same host copy


def test_a_held_array_shows_the_values_of_the_last_forward(net):
    y = net.blobs["y"].data  # kept across forwards
    for scale in (1.0, 3.0):
        net.blobs["x"].data[...] = scale
        net.forward()
        np.testing.assert_allclose(y, reference_forward(net, np.full((5, 3), scale, np.float32)),
                                   rtol=1e-6)


def test_a_view_of_an_array_is_held_too(net):
    first_row = net.blobs["y"].data[0]
    net.blobs["x"].data[...] = 2
    net.forward()
    expected = reference_forward(net, np.full((5, 3), 2, np.float32))[0]
    np.testing.assert_allclose(first_row, expected, rtol=1e-6)


def test_diffs_written_in_python_drive_backward(net):
    x = np.random.RandomState(0).rand(5, 3).astype(np.float32)
    net.blobs["x"].data[...] = x
    net.blobs["target"].data[...] = 0
    net.forward()
    net.clear_param_diffs()
    net.backward()
    y = net.blobs["y"].data
    # Euclidean loss: dL/dy = (y - target) / num; dL/dW = dy^T x.
    dy = y / 5
    np.testing.assert_allclose(net.params["fc"][0].diff, dy.T @ x, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net.params["fc"][1].diff, dy.sum(0), rtol=1e-5, atol=1e-7)


def test_an_array_outlives_its_net(write_file):
    net = caffe.Net(write_file("n.prototxt", LINEAR_NET), caffe.TEST)
    net.params["fc"][0].data[...] = 4
    weights = net.params["fc"][0].data
    del net
    gc.collect()
    np.testing.assert_array_equal(weights, 4)
    weights[...] = 1  # still writable memory of its own


def test_reshape_gives_arrays_of_the_new_shape(net):
    net.blobs["x"].reshape(2, 3)
    net.blobs["target"].reshape(2, 2)
    net.reshape()
    assert net.blobs["y"].data.shape == (2, 2)
    assert net.blobs["x"].shape == (2, 3)
    assert (net.blobs["x"].num, net.blobs["x"].channels, net.blobs["x"].count) == (2, 3, 6)
    net.blobs["x"].data[...] = 1
    net.forward()
    np.testing.assert_allclose(net.blobs["y"].data,
                               reference_forward(net, np.ones((2, 3), np.float32)), rtol=1e-6)


def test_torch_and_numpy_share_the_array_without_a_copy(net):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(net.blobs["x"].data)
    t.fill_(0.25)
    np.testing.assert_array_equal(np.asarray(net.blobs["x"]), 0.25)
    via_dlpack = torch.from_dlpack(net.blobs["x"])
    assert via_dlpack.data_ptr() == t.data_ptr()
    net.forward()
    np.testing.assert_allclose(net.blobs["y"].data,
                               reference_forward(net, np.full((5, 3), 0.25, np.float32)),
                               rtol=1e-6)


def test_assigning_to_data_copies_into_the_blob(net):
    net.blobs["x"].data = np.full((5, 3), 7, np.float32)
    np.testing.assert_array_equal(net.blobs["x"].data, 7)
    with pytest.raises(ValueError):
        net.blobs["x"].data = np.zeros((4, 3), np.float32)


def test_sixteen_bit_blobs_read_and_write_as_float32(write_file):
    # default_forward_type FLOAT16: x and y are stored as halves on the
    # device; numpy sees float32 values, rounded to half on the way in.
    text = "default_forward_type: FLOAT16\n" + LINEAR_NET
    caffe.set_random_seed(7)
    net = caffe.Net(write_file("linear16.prototxt", text), caffe.TRAIN)
    x = (np.arange(15, dtype=np.float32).reshape(5, 3) / 3).astype(np.float32)
    net.blobs["x"].data[...] = x
    assert net.blobs["x"].data.dtype == np.float32
    net.forward()
    x16 = x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(net.blobs["x"].data, x16)
    y = net.blobs["y"].data
    np.testing.assert_array_equal(y, y.astype(np.float16).astype(np.float32))
    np.testing.assert_allclose(y, reference_forward(net, x16), rtol=2e-3, atol=1e-3)
