"""caffe.coord_map on NetSpec tops: maps through convolution, pooling,
deconvolution, crop and pass-through layers against offsets worked out by
hand, the Crop layer crop() writes (and that it lines a net up when run),
and the errors for crops that cannot be made."""
import numpy as np
import pytest

import caffe
from caffe import layers as L, params as P
from caffe.coord_map import (AxisMismatchException, UndefinedMapException, compose,
                             coord_map, coord_map_from_to, crop, inverse)


def fcn_stack(size=20):
    """data -> conv1 (k3 p100) -> relu -> pool1 (max k2 s2) -> conv2 (k3)
    -> deconv (k4 s2): by hand, a data pixel x lands at x + 99 in conv1,
    (x + 99) / 2 - 0.25 in pool1, (x + 99) / 2 - 1.25 in conv2 and
    2 ((x + 99) / 2 - 1.25) + 1.5 = x + 98 in deconv."""
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, size, size]))
    n.conv1 = L.Convolution(n.data, num_output=2, kernel_size=3, pad=100,
                            weight_filler=dict(type="constant", value=0.1))
    n.relu1 = L.ReLU(n.conv1, in_place=True)
    n.pool1 = L.Pooling(n.relu1, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.conv2 = L.Convolution(n.pool1, num_output=2, kernel_size=3,
                            weight_filler=dict(type="constant", value=0.1))
    n.deconv = L.Deconvolution(n.conv2, convolution_param=dict(
        num_output=1, kernel_size=4, stride=2, bias_term=False,
        weight_filler=dict(type="constant", value=1)))
    return n


def test_single_layer_maps():
    n = fcn_stack()
    assert coord_map(n.conv1.fn) == (1, 1, 99)  # pad - (k - 1) / 2
    axis, a, b = coord_map(n.pool1.fn)
    assert (axis, a, b) == (1, 0.5, -0.25)
    assert coord_map(n.deconv.fn) == (1, 2, 1.5)  # (k - 1) / 2 - pad
    assert coord_map(n.relu1.fn) == (None, 1, 0)
    padded = L.Deconvolution(n.conv2, num_output=1, kernel_size=4, stride=2, pad=1)
    assert coord_map(padded.fn) == (1, 2, 0.5)
    dilated = L.Convolution(n.data, num_output=1, kernel_size=3, dilation=2, stride=3, pad=1)
    axis, a, b = coord_map(dilated.fn)  # extent 5: (1 - 2) / 3
    assert a == pytest.approx(1 / 3) and b == pytest.approx(-1 / 3)
    with pytest.raises(UndefinedMapException):
        coord_map(L.InnerProduct(n.data, num_output=3).fn)


def test_stack_maps_and_crop_offsets():
    n = fcn_stack()
    axis, a, b = coord_map_from_to(n.deconv, n.data)
    assert (axis, a, b) == (1, 1, -98)
    axis, a, b = coord_map_from_to(n.data, n.deconv)
    assert (axis, a, b) == (1, 1, 98)
    axis, a, b = coord_map_from_to(n.pool1, n.data)
    assert (axis, a, b) == (1, 2, -98.5)  # inverse of x / 2 + 49.25
    n.score = crop(n.deconv, n.data)
    layer = n.to_proto().layer[-1]
    assert layer.type == "Crop" and list(layer.bottom) == ["deconv", "data"]
    assert layer.crop_param.axis == 2 and list(layer.crop_param.offset) == [98]
    # A crop of a crop: the first crop's offset is composed in.
    n.data2 = L.Input(shape=dict(dim=[1, 1, 10, 10]))
    n.small = L.Crop(n.data, n.data2, crop_param=dict(axis=2, offset=[3]))
    assert coord_map_from_to(n.deconv, n.small) == (1, 1, -101)
    # A Crop maps only its first bottom: the second gives the size.
    assert coord_map_from_to(n.small, n.data) == (1, 1, 3)
    with pytest.raises(RuntimeError, match="Could not compute map"):
        coord_map_from_to(n.small, n.data2)


def test_the_crop_lines_the_net_up():
    n = fcn_stack(size=20)
    n.score = crop(n.deconv, n.data)
    net = caffe.Net(n.to_proto(), caffe.TEST)
    shapes = {name: blob.data.shape for name, blob in net.blobs.items()}
    assert shapes["conv1"] == (1, 2, 218, 218) and shapes["deconv"] == (1, 1, 216, 216)
    assert shapes["score"] == (1, 1, 20, 20)
    net.blobs["data"].data[...] = 1.0
    out = net.forward()
    deconv = net.blobs["deconv"].data
    np.testing.assert_array_equal(out["score"], deconv[:, :, 98:118, 98:118])


def test_per_axis_maps():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 12, 12]))
    n.rect = L.Convolution(n.data, num_output=1, kernel_size=[3, 5], pad=[1, 0])
    axis, a, b = coord_map_from_to(n.data, n.rect)  # x + (1 - 1, 0 - 2)
    assert axis == 1
    assert (a == 1).all()  # stride 1 for both axes (one entry, broadcast)
    np.testing.assert_array_equal(b, [0, -2])
    n.cropped = crop(n.data, n.rect)
    layer = n.to_proto().layer[-1]
    assert layer.crop_param.axis == 2 and list(layer.crop_param.offset) == [0, 2]


def test_errors():
    n = fcn_stack()
    with pytest.raises(AssertionError, match="scale mismatch"):
        crop(n.pool1, n.data)
    with pytest.raises(AssertionError, match="negative offset"):
        crop(n.data, n.deconv)
    even = L.Convolution(n.data, num_output=1, kernel_size=2)  # b = -0.5
    with pytest.raises(AssertionError, match="noninteger offset"):
        crop(n.data, even)
    other = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    with pytest.raises(RuntimeError, match="Could not compute map"):
        coord_map_from_to(n.conv1, other)
    with pytest.raises(AxisMismatchException):
        compose((1, 1, 0), (2, 1, 0))
    assert compose((None, 1, 0), (2, 3, 4)) == (2, 3, 4)
    assert compose((1, 2, 1), (1, 3, 4)) == (1, 6, 9)  # 2 (3 x + 4) + 1
    assert inverse((1, 2.0, 4.0)) == (1, 0.5, -2.0)
    legacy = L.Convolution(n.data, num_output=1, kernel_size=3, pad_h=1, pad_w=1)
    with pytest.raises(AssertionError, match="legacy"):
        coord_map(legacy.fn)
