"""caffe.Net: pycaffe's constructors, names, forward/backward with keyword
arrays, batching, weights in and out, MemoryData feeding and ONNX models."""
import os

import numpy as np
import pytest

import caffe
from conftest import LINEAR_NET

STAGED_NET = """
name: "staged"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 4 } } }
layer { name: "a" type: "InnerProduct" bottom: "data" top: "a"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "deploy_only" type: "ReLU" bottom: "a" top: "a" include { stage: "deploy" } }
layer { name: "deep_only" type: "TanH" bottom: "a" top: "a" include { min_level: 2 } }
"""


@pytest.fixture
def linear_path(write_file):
    return write_file("linear.prototxt", LINEAR_NET)


def numpy_linear(net, x):
    return x @ net.params["fc"][0].data.T + net.params["fc"][1].data


def test_names_and_structure_follow_pycaffe(linear_path):
    net = caffe.Net(linear_path, caffe.TEST)
    assert list(net._layer_names) == ["x", "fc", "loss"]
    assert list(net.blobs) == ["x", "target", "y", "loss"]
    assert list(net.params) == ["fc"]
    assert [p.data.shape for p in net.params["fc"]] == [(2, 3), (2,)]
    assert net.inputs == ["x", "target"] and net.outputs == ["loss"]  # Input tops are inputs
    assert net.top_names["x"] == ["x", "target"]
    assert net.bottom_names["loss"] == ["y", "target"]
    assert net.blob_loss_weights["loss"] == 1.0 and net.blob_loss_weights["y"] == 0.0
    assert [layer.type for layer in net.layers] == ["Input", "InnerProduct", "EuclideanLoss"]
    assert net.layer_dict["fc"].blobs[0].shape == (2, 3)
    assert net.phase == caffe.TEST and net.name == "linear"


def test_both_constructors_and_keyword_weights_load_the_same_weights(linear_path, tmp_path):
    net = caffe.Net(linear_path, caffe.TRAIN)
    net.params["fc"][0].data[...] = np.arange(6).reshape(2, 3)
    net.params["fc"][1].data[...] = [-1, 1]
    weights = str(tmp_path / "w.caffemodel")
    net.save(weights)
    for loaded in (caffe.Net(linear_path, weights, caffe.TEST),
                   caffe.Net(linear_path, caffe.TEST, weights=weights),
                   caffe.Net(linear_path, phase=caffe.TEST, weights=weights)):
        np.testing.assert_array_equal(loaded.params["fc"][0].data, np.arange(6).reshape(2, 3))
        np.testing.assert_array_equal(loaded.params["fc"][1].data, [-1, 1])
    fresh = caffe.Net(linear_path, caffe.TEST)
    fresh.copy_from(weights)
    np.testing.assert_array_equal(fresh.params["fc"][1].data, [-1, 1])


def test_level_and_stages_choose_layers(write_file):
    path = write_file("staged.prototxt", STAGED_NET)
    assert list(caffe.Net(path, caffe.TEST)._layer_names) == ["data", "a"]
    assert list(caffe.Net(path, caffe.TEST, stages=["deploy"])._layer_names) == [
        "data", "a", "deploy_only"]
    assert list(caffe.Net(path, caffe.TEST, level=2)._layer_names) == ["data", "a", "deep_only"]


def test_a_net_parameter_object_builds_a_net():
    param = caffe.proto.caffe_pb2.NetParameter()
    from google.protobuf import text_format
    text_format.Merge(STAGED_NET, param)
    net = caffe.Net(param, caffe.TEST, stages=["deploy"])
    assert list(net._layer_names) == ["data", "a", "deploy_only"]


def test_bad_arguments_are_clear_errors(linear_path, write_file, tmp_path):
    with pytest.raises(ValueError, match="phase"):
        caffe.Net(linear_path, 5)
    with pytest.raises(TypeError, match="phase"):
        caffe.Net(linear_path)
    with pytest.raises(TypeError, match="wieghts"):
        caffe.Net(linear_path, caffe.TEST, wieghts="x")
    missing = str(tmp_path / "missing.prototxt")
    with pytest.raises(caffe.Error, match="missing.prototxt"):
        caffe.Net(missing, caffe.TEST)
    bad = write_file("bad.prototxt", 'layer { name: "odd" type: "NoSuchLayer" top: "t" }')
    with pytest.raises(caffe.Error, match="odd"):
        caffe.Net(bad, caffe.TEST)


def test_forward_with_keyword_inputs_and_partial_passes(write_file):
    net = caffe.Net(write_file("s.prototxt", STAGED_NET), caffe.TEST, stages=["deploy"])
    x = np.random.RandomState(1).randn(2, 4).astype(np.float32)
    out = net.forward(data=x)
    w = net.params["a"][0].data
    np.testing.assert_allclose(out["a"], np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-6)
    assert set(out) == {"a"}
    # Up to layer 'a' only: the ReLU does not run.
    partial = net.forward(data=x, end="a")
    np.testing.assert_allclose(partial["a"], x @ w.T, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="data"):
        net.forward(wrong=x)
    with pytest.raises(ValueError, match="batch"):
        net.forward(data=np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="no layer"):
        net.forward(start="nowhere")


def test_backward_with_keyword_diffs(write_file):
    net = caffe.Net(write_file("s.prototxt", STAGED_NET.replace("name: \"staged\"",
                                                                "name: \"s\" force_backward: true")),
                    caffe.TEST)
    x = np.random.RandomState(2).randn(2, 4).astype(np.float32)
    net.forward(data=x)
    top_diff = np.random.RandomState(3).randn(2, 3).astype(np.float32)
    grads = net.backward(a=top_diff)
    w = net.params["a"][0].data
    np.testing.assert_allclose(grads["data"], top_diff @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.params["a"][0].diff, top_diff.T @ x, rtol=1e-5, atol=1e-6)


def test_forward_all_batches_any_number_of_items(write_file):
    net = caffe.Net(write_file("s.prototxt", STAGED_NET), caffe.TEST)
    x = np.random.RandomState(4).randn(7, 4).astype(np.float32)  # batch 2: 4 passes
    out = net.forward_all(data=x)
    w = net.params["a"][0].data
    assert out["a"].shape == (7, 3)
    np.testing.assert_allclose(out["a"], x @ w.T, rtol=1e-5, atol=1e-6)


def test_forward_backward_all(write_file):
    net = caffe.Net(write_file("s.prototxt", STAGED_NET.replace("name: \"staged\"",
                                                                "name: \"s\" force_backward: true")),
                    caffe.TEST)
    x = np.random.RandomState(5).randn(5, 4).astype(np.float32)
    d = np.random.RandomState(6).randn(5, 3).astype(np.float32)
    outs, diffs = net.forward_backward_all(data=x, a=d)
    w = net.params["a"][0].data
    np.testing.assert_allclose(outs["a"], x @ w.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(diffs["data"], d @ w, rtol=1e-5, atol=1e-6)


def test_share_with_uses_the_same_weights(linear_path):
    a = caffe.Net(linear_path, caffe.TRAIN)
    b = caffe.Net(linear_path, caffe.TEST)
    b.share_with(a)
    a.params["fc"][0].data[...] = 3
    a.forward()  # device work: a's write reaches the shared buffer
    np.testing.assert_array_equal(b.params["fc"][0].data, 3)


def test_to_proto_carries_the_weights(linear_path):
    net = caffe.Net(linear_path, caffe.TEST)
    net.params["fc"][1].data[...] = [0.5, -0.5]
    proto = net.to_proto()
    fc = [layer for layer in proto.layer if layer.name == "fc"][0]
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(fc.blobs[1]), [0.5, -0.5])


MEMORY_NET = """
name: "memory"
layer { name: "data" type: "MemoryData" top: "data" top: "label"
        memory_data_param { batch_size: 2 channels: 1 height: 2 width: 3 } }
layer { name: "flat" type: "Flatten" bottom: "data" top: "flat" }
"""


def test_set_input_arrays_feeds_a_memory_data_layer(write_file):
    net = caffe.Net(write_file("m.prototxt", MEMORY_NET), caffe.TEST)
    data = np.arange(24, dtype=np.float32).reshape(4, 1, 2, 3)
    labels = np.array([3, 1, 4, 1], np.float32)
    net.set_input_arrays(data, labels)
    for batch in range(2):
        net.forward()
        np.testing.assert_array_equal(net.blobs["flat"].data,
                                      data[2 * batch:2 * batch + 2].reshape(2, 6))
        np.testing.assert_array_equal(net.blobs["label"].data.ravel(),
                                      labels[2 * batch:2 * batch + 2])
    with pytest.raises(ValueError, match="multiple"):
        net.set_input_arrays(data[:3], labels[:3])


def test_an_onnx_model_runs_and_trains_with_a_python_loop(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.RandomState(0)
    w = rng.randn(3, 4).astype(np.float32)
    b = np.abs(rng.randn(3)).astype(np.float32) + 3  # every ReLU open
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = str(tmp_path / "tiny.onnx")
    onnx.save(model, path)

    net = caffe.Net(path, caffe.TEST)
    x = rng.randn(2, 4).astype(np.float32)
    out = net.forward(**{net.inputs[0]: x})
    np.testing.assert_allclose(out[net.outputs[0]], np.maximum(x @ w.T + b, 0), rtol=1e-5,
                               atol=1e-6)

    # Fine-tuning from Python: squared error to a target, plain SGD on .data.
    train = caffe.Net(path, caffe.TRAIN)
    target = np.abs(rng.randn(2, 3)).astype(np.float32) + 0.5
    # One backward against numpy's gradients of the squared error.
    y = train.forward(**{train.inputs[0]: x})[train.outputs[0]]
    grads = train.backward(**{train.outputs[0]: y - target})
    dh = (y - target) * (y > 0)
    weight = [p for p in train.params.values() for p in p if p.data.shape == (3, 4)][0]
    np.testing.assert_allclose(weight.diff, dh.T @ x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[train.inputs[0]], dh @ w, rtol=1e-4, atol=1e-5)
    losses = []
    for _ in range(60):
        y = train.forward(**{train.inputs[0]: x})[train.outputs[0]]
        losses.append(float(((y - target) ** 2).sum() / 2))
        for blobs in train.params.values():
            for p in blobs:
                p.diff[...] = 0
        train.backward(**{train.outputs[0]: y - target})
        for blobs in train.params.values():
            for p in blobs:
                p.data[...] -= 0.05 * p.diff
    assert len(train.params) > 0
    assert losses[-1] < 0.05 * losses[0], losses


def test_layer_type_list_names_caffes_layers():
    types = caffe.layer_type_list()
    for name in ("Convolution", "InnerProduct", "Pooling", "SoftmaxWithLoss", "Python"):
        assert name in types
    assert "SGD" in caffe.solver_type_list()
