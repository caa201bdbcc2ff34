"""A Python data layer serving MNIST batches straight from the idx files.

Use it in a prototxt as

    layer { name: "mnist" type: "Python" top: "data" top: "label"
            python_param { module: "mnist_data_layer" layer: "MnistDataLayer"
                           param_str: '{"split": "train", "batch_size": 64, "seed": 1}' } }

with this folder on the module search path (a script in it has it there).
param_str is JSON:

    split       "train" or "test" (which idx files to read)
    batch_size  images per forward
    seed        seed of the shuffling (default 0)
    shuffle     draw batches in a shuffled order, reshuffled every epoch
                (default: true for "train", false for "test")
    mnist_dir   the MNIST folder (default: $MNIST_DIR, else ../shared/data/mnist)

Tops: "data" (batch_size, 1, 28, 28) float32 scaled to [0, 1) as Caffe's
LeNet expects (pixel / 256), and "label" (batch_size,) with the digits.
"""
import json

import numpy as np

import caffe
import mnist_files

SCALE = 1.0 / 256  # Caffe's LeNet: transform_param { scale: 0.00390625 }


class MnistDataLayer(caffe.Layer):
    """Serves (images, labels) batches of one MNIST split."""

    def setup(self, bottom, top):
        if bottom:
            raise ValueError("MnistDataLayer takes no bottoms")
        if len(top) != 2:
            raise ValueError("MnistDataLayer has two tops: data and label")
        params = json.loads(self.param_str or "{}")
        split = params.get("split", "train" if self.phase == caffe.TRAIN else "test")
        self.batch_size = int(params.get("batch_size", 64))
        self.shuffle = bool(params.get("shuffle", split == "train"))
        self.rng = np.random.RandomState(params.get("seed", 0))

        images, labels = mnist_files.load(split, params.get("mnist_dir"))
        self.images = images.astype(np.float32) * SCALE
        self.labels = labels.astype(np.float32)
        self.order = self._new_order()
        self.position = 0

    def _new_order(self):
        indices = np.arange(len(self.labels))
        if self.shuffle:
            self.rng.shuffle(indices)
        return indices

    def _next_indices(self):
        """The next batch_size indices, starting a new epoch when this one is used up."""
        chosen = []
        while len(chosen) < self.batch_size:
            if self.position == len(self.order):
                self.order = self._new_order()
                self.position = 0
            take = min(self.batch_size - len(chosen), len(self.order) - self.position)
            chosen.extend(self.order[self.position:self.position + take])
            self.position += take
        return np.array(chosen)

    def reshape(self, bottom, top):
        top[0].reshape(self.batch_size, 1, 28, 28)
        top[1].reshape(self.batch_size)

    def forward(self, bottom, top):
        indices = self._next_indices()
        top[0].data[...] = self.images[indices, np.newaxis]
        top[1].data[...] = self.labels[indices]

    def backward(self, top, propagate_down, bottom):
        pass  # data has no gradient
