"""An FCN-style Caffe net (issue 50, item 5: segmentation stays covered):
convolutions with FCN's pad 100, max pooling (Caffe's ceil mode), 1x1
scores, Deconvolution upsampling, skip scores lined up by Crop layers whose
offsets caffe.coord_map.crop works out, an Eltwise sum, and the final Crop
back to the input: forward and backward against the same net written in
PyTorch (Debian's torch) in float64."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import caffe
from caffe import layers as L, params as P
from caffe.coord_map import crop

CLASSES, H, W = 5, 37, 45


def fcn_net_spec():
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 3, H, W]))
    n.conv1 = L.Convolution(n.data, num_output=8, kernel_size=3, pad=100)
    n.relu1 = L.ReLU(n.conv1, in_place=True)
    n.pool1 = L.Pooling(n.relu1, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.conv2 = L.Convolution(n.pool1, num_output=12, kernel_size=3)
    n.relu2 = L.ReLU(n.conv2, in_place=True)
    n.pool2 = L.Pooling(n.relu2, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.score_fr = L.Convolution(n.pool2, num_output=CLASSES, kernel_size=1)
    n.upscore2 = L.Deconvolution(n.score_fr, convolution_param=dict(
        num_output=CLASSES, kernel_size=4, stride=2, bias_term=False))
    n.score_pool1 = L.Convolution(n.pool1, num_output=CLASSES, kernel_size=1)
    n.score_pool1c = crop(n.score_pool1, n.upscore2)
    n.fuse = L.Eltwise(n.upscore2, n.score_pool1c, operation=P.Eltwise.SUM)
    n.upscore = L.Deconvolution(n.fuse, convolution_param=dict(
        num_output=CLASSES, kernel_size=4, stride=2, bias_term=False))
    n.score = crop(n.upscore, n.data)
    return n


def torch_forward(n, params, x):
    """The same net in PyTorch; the Crop offsets read from the prototxt."""
    def offsets(name):
        layer = [l for l in n.to_proto().layer if l.name == name][0]
        return list(layer.crop_param.offset)

    def cropped(t, like, name):
        off = offsets(name)
        oh, ow = (off * 2)[:2] if len(off) == 1 else off
        return t[:, :, oh:oh + like.shape[2], ow:ow + like.shape[3]]

    p = params
    conv1 = F.relu(F.conv2d(x, p["conv1"][0], p["conv1"][1], padding=100))
    pool1 = F.max_pool2d(conv1, 2, 2, ceil_mode=True)
    conv2 = F.relu(F.conv2d(pool1, p["conv2"][0], p["conv2"][1]))
    pool2 = F.max_pool2d(conv2, 2, 2, ceil_mode=True)
    score_fr = F.conv2d(pool2, p["score_fr"][0], p["score_fr"][1])
    upscore2 = F.conv_transpose2d(score_fr, p["upscore2"][0], stride=2)
    score_pool1 = F.conv2d(pool1, p["score_pool1"][0], p["score_pool1"][1])
    fuse = upscore2 + cropped(score_pool1, upscore2, "score_pool1c")
    upscore = F.conv_transpose2d(fuse, p["upscore"][0], stride=2)
    return cropped(upscore, x, "score")


def test_fcn_forward_and_backward_match_torch(write_file):
    n = fcn_net_spec()
    model = write_file("fcn.prototxt", "force_backward: true\n" + str(n.to_proto()))
    net = caffe.Net(model, caffe.TEST)
    rng = np.random.RandomState(7)
    params = {}
    for name, blobs in net.params.items():
        for blob in blobs:
            fan_in = np.prod(blob.data.shape[1:]) if blob.data.ndim > 1 else 1
            blob.data[...] = rng.normal(0, 1 / np.sqrt(fan_in), blob.data.shape)
        params[name] = [torch.tensor(b.data, dtype=torch.float64, requires_grad=True) for b in blobs]
    x = rng.normal(0, 1, (2, 3, H, W)).astype(np.float32)
    net.blobs["data"].data[...] = x
    out = net.forward()["score"]
    assert out.shape == (2, CLASSES, H, W)

    x64 = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ref = torch_forward(n, params, x64)
    np.testing.assert_allclose(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)

    dy = rng.normal(0, 1, out.shape).astype(np.float32)
    net.blobs["score"].diff[...] = dy
    net.backward()
    (ref * torch.tensor(dy, dtype=torch.float64)).sum().backward()
    scale = np.abs(x64.grad.numpy()).max()
    np.testing.assert_allclose(net.blobs["data"].diff, x64.grad.numpy(), rtol=1e-4, atol=1e-5 * scale)
    for name, blobs in net.params.items():
        for blob, tensor in zip(blobs, params[name]):
            g = tensor.grad.numpy()
            np.testing.assert_allclose(blob.diff, g, rtol=1e-4, atol=1e-5 * np.abs(g).max(),
                                       err_msg="gradient of %s" % name)
