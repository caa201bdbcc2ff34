"""Python layers the tests build nets with (python_param module:
sample_python_layers)."""
import json

import numpy as np

import caffe


class TimesLayer(caffe.Layer):
    """top = factor * bottom; factor from param_str's JSON."""

    def setup(self, bottom, top):
        self.factor = json.loads(self.param_str)["factor"]

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.factor * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        if propagate_down[0]:
            bottom[0].diff[...] = self.factor * top[0].diff


class LearnedScaleLayer(caffe.Layer):
    """top = w * bottom with one learnable scalar w (a blob of its own)."""

    def setup(self, bottom, top):
        self.blobs.add_blob(1)
        self.blobs[0].data[...] = 1.0

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data[0] * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        self.blobs[0].diff[0] += np.sum(top[0].diff * bottom[0].data)
        if propagate_down[0]:
            bottom[0].diff[...] = self.blobs[0].data[0] * top[0].diff


class EuclideanLossLayer(caffe.Layer):
    """pycaffe's classic example: loss = sum((a - b)^2) / num / 2."""

    def setup(self, bottom, top):
        if len(bottom) != 2:
            raise Exception("Need two inputs to compute distance.")

    def reshape(self, bottom, top):
        self.diff = np.zeros_like(bottom[0].data, dtype=np.float32)
        top[0].reshape(1)

    def forward(self, bottom, top):
        self.diff[...] = bottom[0].data - bottom[1].data
        top[0].data[...] = np.sum(self.diff ** 2) / bottom[0].num / 2.

    def backward(self, top, propagate_down, bottom):
        for i in range(2):
            if propagate_down[i]:
                sign = 1 if i == 0 else -1
                bottom[i].diff[...] = sign * top[0].diff[0] * self.diff / bottom[i].num


class LineDataLayer(caffe.Layer):
    """A data layer: batches of x in [-1, 1] and y = 3 x - 1, drawn with a
    seeded generator; the TEST phase draws from another seed."""

    def setup(self, bottom, top):
        params = json.loads(self.param_str)
        self.batch = params["batch"]
        self.rng = np.random.RandomState(1 if self.phase == caffe.TRAIN else 2)

    def reshape(self, bottom, top):
        top[0].reshape(self.batch, 1)
        top[1].reshape(self.batch, 1)

    def forward(self, bottom, top):
        x = self.rng.uniform(-1, 1, size=(self.batch, 1)).astype(np.float32)
        top[0].data[...] = x
        top[1].data[...] = 3 * x - 1

    def backward(self, top, propagate_down, bottom):
        pass


class FailingLayer(caffe.Layer):
    """Raises in forward, as a buggy user layer would."""

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        raise ValueError("the sample layer fails on purpose")
