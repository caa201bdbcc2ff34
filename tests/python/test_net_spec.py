"""caffe.NetSpec / caffe.layers / caffe.params: the NetParameter written
compared field by field with the prototxt it must equal, parsed back from
text, automatic names, and a NetSpec net built and run by caffe.Net."""
import numpy as np
import pytest
from google.protobuf import text_format

import caffe
from caffe import layers as L, params as P
from caffe.proto import caffe_pb2


def parse_net(text):
    return text_format.Parse(text, caffe_pb2.NetParameter())


def small_net():
    n = caffe.NetSpec()
    n.data, n.label = L.DummyData(shape=[dict(dim=[2, 3, 6, 5]), dict(dim=[2])], ntop=2)
    n.conv = L.Convolution(n.data, kernel_size=3, num_output=8, pad=[1],
                           weight_filler=dict(type="xavier"),
                           param=[dict(lr_mult=1), dict(lr_mult=2, decay_mult=0)])
    n.relu = L.ReLU(n.conv, in_place=True)
    n.pool = L.Pooling(n.relu, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.ip = L.InnerProduct(L.Dropout(n.pool, dropout_ratio=0.25), num_output=4)
    n.loss = L.SoftmaxWithLoss(n.ip, n.label, loss_weight=2.0)
    n.acc = L.Accuracy(n.ip, n.label, include=dict(phase=caffe.TEST), name="accuracy")
    n.silence = L.Silence(n.label, ntop=0)
    return n


EXPECTED = """
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { shape { dim: 2 dim: 3 dim: 6 dim: 5 } shape { dim: 2 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        param { lr_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
        convolution_param { num_output: 8 pad: 1 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "Dropout1" type: "Dropout" bottom: "pool" top: "Dropout1"
        dropout_param { dropout_ratio: 0.25 } }
layer { name: "ip" type: "InnerProduct" bottom: "Dropout1" top: "ip"
        inner_product_param { num_output: 4 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss"
        loss_weight: 2 }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "acc"
        include { phase: TEST } }
layer { name: "silence" type: "Silence" bottom: "label" }
"""


def test_netspec_writes_the_expected_net():
    net = small_net().to_proto()
    assert isinstance(net, caffe_pb2.NetParameter)
    expected = parse_net(EXPECTED)
    assert len(net.layer) == len(expected.layer)
    for got, want in zip(net.layer, expected.layer):
        assert got == want, "layer %s:\n%s\nexpected\n%s" % (want.name, got, want)
    assert net == expected
    # The text form parses back to the same message.
    assert parse_net(str(net)) == net
    assert parse_net(text_format.MessageToString(net)) == expected


def test_netspec_containers_and_enums():
    n = caffe.NetSpec()
    n["data"] = L.Input(shape=dict(dim=[1, 2]))
    n.out = L.Power(n.data, power=2.0, scale=0.5)
    assert n.keys() == ["data", "out"] and n["out"] is n.out
    assert n.out.fn.type_name == "Power" and n.out.fn.params == {"power": 2.0, "scale": 0.5}
    del n["out"]
    assert n.keys() == ["data"]
    assert P.Pooling.MAX == caffe_pb2.PoolingParameter.MAX
    assert P.Pooling.AVE == caffe_pb2.PoolingParameter.AVE
    assert P.Data.LMDB == caffe_pb2.DataParameter.LMDB
    assert P.Eltwise.SUM == caffe_pb2.EltwiseParameter.SUM
    tops = L.Slice(n.data, ntop=3)
    assert isinstance(tops, tuple) and len(tops) == 3 and tops[2].n == 2
    assert isinstance(L.Silence(n.data, ntop=0), caffe.net_spec.Function)


def test_automatic_names():
    data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    a = L.Convolution(data, kernel_size=1, num_output=1)
    b = L.Convolution(a, kernel_size=1, num_output=1)
    c = L.ReLU(b, in_place=True)
    s = L.Eltwise(c, a, operation=P.Eltwise.SUM)
    net = caffe.net_spec.to_proto(s)
    assert [l.name for l in net.layer] == ["Input1", "Convolution1", "Convolution2", "ReLU1",
                                           "Eltwise1"]
    assert [list(l.top) for l in net.layer] == [["Input1"], ["Convolution1"], ["Convolution2"],
                                                ["Convolution2"], ["Eltwise1"]]
    assert list(net.layer[4].bottom) == ["Convolution2", "Convolution1"]
    assert net.layer[4].eltwise_param.operation == P.Eltwise.SUM
    assert s.to_proto() == net
    # A deconvolution takes convolution_param's fields, and also the dict.
    up = L.Deconvolution(data, num_output=2, kernel_size=4, stride=2, bias_term=False)
    same = L.Deconvolution(data, convolution_param=dict(num_output=2, kernel_size=[4],
                                                        stride=[2], bias_term=False))
    assert up.to_proto().layer[1].convolution_param == same.to_proto().layer[1].convolution_param


def test_errors():
    two = L.DummyData(shape=dict(dim=[1]), ntop=2)
    with pytest.raises(TypeError, match=r"^Silence input 0 is not a Top \(type is <class 'tuple'>\)$"):
        L.Silence(two, ntop=0)
    L.Silence(*two, ntop=0)
    x = L.Input(shape=dict(dim=[1]))
    with pytest.raises(AttributeError):
        L.ReLU(x, not_a_field=3).to_proto()
    with pytest.raises(AttributeError):
        caffe.NetSpec().missing


def test_a_netspec_net_runs():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 3]))
    n.scaled = L.Power(n.data, power=1.0, scale=3.0, shift=1.0)
    n.out = L.ReLU(n.scaled, in_place=True)
    net = caffe.Net(n.to_proto(), caffe.TEST)
    assert list(net.blobs.keys()) == ["data", "scaled"]
    x = np.array([[-1.0, 0.0, 2.0], [0.5, -0.5, -3.0]], dtype=np.float32)
    out = net.forward(data=x)
    np.testing.assert_allclose(out["scaled"], np.maximum(3 * x + 1, 0))
