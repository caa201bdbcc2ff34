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


CONV_NET = """
name: "conv"
layer { name: "x" type: "Input" top: "x" input_param { shape { dim: 2 dim: 8 dim: 5 dim: 6 } } }
layer { name: "conv" type: "Convolution" bottom: "x" top: "y"
        convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false } }
"""

# Runs in a process of its own: the options come from the environment when
# the device's context is made.
CONV_WRITES = """
import sys
import numpy as np
import caffe

net = caffe.Net(sys.argv[1], caffe.TEST)
rng = np.random.RandomState(0)
x = rng.standard_normal((2, 8, 5, 6)).astype(np.float32)
net.blobs["x"].data[...] = x
padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
for attempt in range(2):
    w = rng.standard_normal((8, 8, 3, 3)).astype(np.float32)
    net.params["conv"][0].data[...] = w
    net.forward()
    want = sum(np.einsum("oc,nchw->nohw", w[:, :, i, j], padded[:, :, i:i + 5, j:j + 6])
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(net.blobs["y"].data, want, rtol=1e-4, atol=1e-4)
print("weights written from numpy reached both forwards")
"""


def test_weights_written_from_numpy_reach_a_layers_kept_copy(write_file):
    # Channels-last filters are a copy the layer keeps until the weights
    # change (core/derived_copy.hpp); a write through the array must count.
    import os
    import subprocess
    import sys
    env = dict(os.environ, DLCAFFE_CONV_CHANNELS_LAST="on", DLCAFFE_KERNEL_SHAPE="gpu",
               DLCAFFE_CONV_WINOGRAD="off", PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", CONV_WRITES, write_file("conv.prototxt", CONV_NET)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reached both forwards" in done.stdout
