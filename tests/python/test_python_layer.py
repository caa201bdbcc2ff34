"""type: "Python" layers: forward and backward against numpy and numerical
gradients, learnable blobs, a Python data layer and loss in training, and
errors that name the module and layer."""
import numpy as np
import pytest

import caffe

TIMES_NET = """
name: "times" force_backward: true
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 3 dim: 5 dim: 2 } } }
layer { name: "times" type: "Python" bottom: "data" top: "out"
        python_param { module: "sample_python_layers" layer: "TimesLayer"
                       param_str: '{"factor": -2.5}' } }
"""

LOSS_NET = """
name: "loss" force_backward: true
layer { name: "data" type: "Input" top: "a" top: "b"
        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 3 } } }
layer { name: "scale" type: "Python" bottom: "a" top: "scaled"
        python_param { module: "sample_python_layers" layer: "LearnedScaleLayer" } }
layer { name: "loss" type: "Python" bottom: "scaled" bottom: "b" top: "loss" loss_weight: 1
        python_param { module: "sample_python_layers" layer: "EuclideanLossLayer" } }
"""

TRAIN_NET = """
name: "line"
layer { name: "data" type: "Python" top: "x" top: "y"
        python_param { module: "sample_python_layers" layer: "LineDataLayer"
                       param_str: '{"batch": 8}' } }
layer { name: "fit" type: "InnerProduct" bottom: "x" top: "fit"
        inner_product_param { num_output: 1 weight_filler { type: "constant" value: 0 } } }
layer { name: "scale" type: "Python" bottom: "fit" top: "scaled"
        python_param { module: "sample_python_layers" layer: "LearnedScaleLayer" } }
layer { name: "loss" type: "Python" bottom: "scaled" bottom: "y" top: "loss" loss_weight: 1
        python_param { module: "sample_python_layers" layer: "EuclideanLossLayer" } }
"""


def test_forward_and_backward_run_the_python_code(write_file):
    net = caffe.Net(write_file("times.prototxt", TIMES_NET), caffe.TRAIN)
    layer = net.layers[1]
    assert layer.factor == -2.5 and layer.param_str == '{"factor": -2.5}'
    assert layer.phase == caffe.TRAIN
    x = np.random.RandomState(0).randn(3, 5, 2).astype(np.float32)
    out = net.forward(data=x)["out"]
    np.testing.assert_allclose(out, -2.5 * x, rtol=1e-6)
    d = np.random.RandomState(1).randn(3, 5, 2).astype(np.float32)
    grads = net.backward(out=d)
    np.testing.assert_allclose(grads["data"], -2.5 * d, rtol=1e-6)


def loss_at(net, a, b):
    return float(net.forward(a=a, b=b)["loss"])


def test_python_loss_and_learnable_blob_match_numerical_gradients(write_file):
    net = caffe.Net(write_file("loss.prototxt", LOSS_NET), caffe.TRAIN)
    assert list(net.params) == ["scale"]
    net.params["scale"][0].data[...] = 0.7
    rng = np.random.RandomState(2)
    a = rng.randn(4, 3).astype(np.float32)
    b = rng.randn(4, 3).astype(np.float32)
    loss = loss_at(net, a, b)
    np.testing.assert_allclose(loss, np.sum((0.7 * a - b) ** 2) / 4 / 2, rtol=1e-5)
    net.clear_param_diffs()
    net.backward()
    analytic_a = net.blobs["a"].diff.copy()
    analytic_w = net.params["scale"][0].diff[0]
    eps = 1e-2
    for index in [(0, 0), (1, 2), (3, 1)]:
        plus, minus = a.copy(), a.copy()
        plus[index] += eps
        minus[index] -= eps
        numeric = (loss_at(net, plus, b) - loss_at(net, minus, b)) / (2 * eps)
        assert analytic_a[index] == pytest.approx(numeric, rel=2e-2, abs=1e-3)
    net.params["scale"][0].data[...] = 0.7 + eps
    up = loss_at(net, a, b)
    net.params["scale"][0].data[...] = 0.7 - eps
    down = loss_at(net, a, b)
    assert analytic_w == pytest.approx((up - down) / (2 * eps), rel=2e-2)


def test_a_python_data_layer_and_loss_train_with_a_solver(write_file, tmp_path):
    net = write_file("line.prototxt", TRAIN_NET)
    solver_path = write_file("solver.prototxt", """
        train_net: "%s" test_net: "%s" test_iter: 4 test_interval: 1000
        base_lr: 0.2 momentum: 0.5 lr_policy: "fixed" max_iter: 300 display: 0
        snapshot_prefix: "%s" random_seed: 1
    """ % (net, net, tmp_path / "line"))
    solver = caffe.SGDSolver(solver_path)
    solver.step(300)
    # y = 3 x - 1 through w * (a x + c): w a -> 3, w c -> -1.
    w = solver.net.params["scale"][0].data[0]
    a = solver.net.params["fit"][0].data[0, 0]
    c = solver.net.params["fit"][1].data[0]
    assert w * a == pytest.approx(3, abs=0.05) and w * c == pytest.approx(-1, abs=0.05)
    test = solver.test_nets[0]
    assert test.layers[0].phase == caffe.TEST
    assert float(test.forward()["loss"]) < 1e-3


def test_a_missing_module_or_class_is_named(write_file):
    missing = TIMES_NET.replace("sample_python_layers", "no_such_layer_module")
    with pytest.raises(caffe.Error, match="no_such_layer_module"):
        caffe.Net(write_file("m.prototxt", missing), caffe.TEST)
    no_class = TIMES_NET.replace("TimesLayer", "NoSuchLayer")
    with pytest.raises(caffe.Error, match="NoSuchLayer"):
        caffe.Net(write_file("c.prototxt", no_class), caffe.TEST)


def test_an_exception_in_forward_names_the_layer_and_the_error(write_file):
    failing = TIMES_NET.replace("TimesLayer", "FailingLayer")
    net = caffe.Net(write_file("f.prototxt", failing), caffe.TEST)
    with pytest.raises(caffe.Error) as raised:
        net.forward()
    message = str(raised.value)
    assert "layer 'times'" in message and "FailingLayer.forward" in message
    assert "ValueError: the sample layer fails on purpose" in message


def test_a_python_layer_in_a_sixteen_bit_net_reads_and_writes_float(write_file):
    # The net stores FLOAT16 (here the Input and a Reshape of it that changes
    # nothing); the Python layer stays float32 behind Convert layers (made
    # once: its class is not instantiated to ask).
    text = TIMES_NET.replace(
        'name: "times" force_backward: true',
        'name: "times" force_backward: true default_forward_type: FLOAT16').replace(
            'layer { name: "times" type: "Python" bottom: "data" top: "out"',
            'layer { name: "same" type: "Reshape" bottom: "data" top: "h"\n'
            '        reshape_param { shape { dim: 3 dim: 5 dim: 2 } } }\n'
            'layer { name: "times" type: "Python" bottom: "h" top: "out"')
    net = caffe.Net(write_file("times16.prototxt", text), caffe.TRAIN)
    assert "h_as_float" in net.blobs
    x = np.random.RandomState(0).randn(3, 5, 2).astype(np.float32)
    x16 = x.astype(np.float16).astype(np.float32)
    out = net.forward(data=x)["out"]
    np.testing.assert_array_equal(out, -2.5 * x16)  # exact: x16 times -2.5 fits a float
    d = np.random.RandomState(1).randn(3, 5, 2).astype(np.float32)
    grads = net.backward(out=d)
    np.testing.assert_array_equal(
        grads["data"], (-2.5 * d).astype(np.float16).astype(np.float32))


def test_an_input_read_only_by_a_python_layer_stays_float(write_file):
    # Nothing reads it in 16 bits, so the storage pass keeps it float32: no
    # Convert, and the Python layer sees the values as given.
    text = TIMES_NET.replace('name: "times" force_backward: true',
                             'name: "times" force_backward: true default_forward_type: FLOAT16')
    net = caffe.Net(write_file("times16.prototxt", text), caffe.TRAIN)
    assert "data_as_float" not in net.blobs
    x = np.random.RandomState(0).randn(3, 5, 2).astype(np.float32)
    np.testing.assert_array_equal(net.forward(data=x)["out"], -2.5 * x)
