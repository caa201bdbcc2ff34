"""pycaffe's caffe.Classifier: a Net for image classification that resizes,
crops and preprocesses H x W x C images (as caffe.io.load_image gives) and
returns the net's first output for each image.

    net = caffe.Classifier('deploy.prototxt', 'weights.caffemodel',
                           image_dims=(256, 256), mean=np.array([104, 117, 123]),
                           raw_scale=255, channel_swap=(2, 1, 0))
    probabilities = net.predict([caffe.io.load_image('cat.jpg')])
"""
import numpy as np

from . import io as caffe_io
from ._dlcaffe import TEST, Net

__all__ = ["Classifier"]


def input_transformer(net, mean, input_scale, raw_scale, channel_swap):
    """pycaffe's Transformer for a net's first input, as Classifier and
    Detector set it up: transpose (2, 0, 1), then the given channel_swap,
    raw_scale, mean and input_scale (each only if given)."""
    in_ = net.inputs[0]
    transformer = caffe_io.Transformer({in_: net.blobs[in_].data.shape})
    transformer.set_transpose(in_, (2, 0, 1))
    if mean is not None:
        transformer.set_mean(in_, mean)
    if input_scale is not None:
        transformer.set_input_scale(in_, input_scale)
    if raw_scale is not None:
        transformer.set_raw_scale(in_, raw_scale)
    if channel_swap is not None:
        transformer.set_channel_swap(in_, channel_swap)
    return transformer


class Classifier(Net):
    """A Net (made for caffe.TEST from model_file and pretrained_file) with
    a caffe.io.Transformer for its first input: transpose (2, 0, 1), then
    the given channel_swap, raw_scale, mean and input_scale (pycaffe's
    order). image_dims (height, width) is the size images are resized to
    before cropping; the net's input size by default."""

    def __init__(self, model_file, pretrained_file, image_dims=None, mean=None,
                 input_scale=None, raw_scale=None, channel_swap=None):
        Net.__init__(self, model_file, pretrained_file, TEST)
        in_ = self.inputs[0]
        self.transformer = input_transformer(self, mean, input_scale, raw_scale, channel_swap)
        self.crop_dims = np.array(self.blobs[in_].data.shape[2:])
        if image_dims is None or len(image_dims) == 0:
            image_dims = self.crop_dims
        self.image_dims = image_dims

    def predict(self, inputs, oversample=True):
        """The first output of the net for each image of `inputs` (a list of
        H x W x K arrays): each is resized to image_dims, then with
        oversample the ten crops of caffe.io.oversample go through the net
        and their outputs are averaged, else the center crop does.
        Returns an array of len(inputs) x (the output's size)."""
        inputs = list(inputs)
        if not inputs:
            raise ValueError("predict: no images given")
        height, width = (int(d) for d in self.image_dims)
        crop_h, crop_w = (int(d) for d in self.crop_dims)
        images = np.zeros((len(inputs), height, width, inputs[0].shape[2]), dtype=np.float32)
        for index, image in enumerate(inputs):
            images[index] = caffe_io.resize_image(image, (height, width))
        if oversample:
            images = caffe_io.oversample(images, (crop_h, crop_w))
        else:
            # The center crop: center - crop / 2, truncated toward zero.
            top = int(height / 2.0 - crop_h / 2.0)
            left = int(width / 2.0 - crop_w / 2.0)
            images = images[:, top:top + crop_h, left:left + crop_w, :]
        in_ = self.inputs[0]
        net_input = np.zeros((len(images), images.shape[3], crop_h, crop_w), dtype=np.float32)
        for index, image in enumerate(images):
            net_input[index] = self.transformer.preprocess(in_, image)
        predictions = self.forward_all(**{in_: net_input})[self.outputs[0]]
        if oversample:
            predictions = predictions.reshape((len(predictions) // 10, 10, -1)).mean(1)
        return predictions
