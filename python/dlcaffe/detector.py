"""pycaffe's caffe.Detector: a Net that classifies windows of images
(R-CNN style): each window is cropped (optionally with context padding),
warped to the net's input size, preprocessed and run through the net.

    detector = caffe.Detector('deploy.prototxt', 'weights.caffemodel',
                              raw_scale=255, channel_swap=(2, 1, 0), context_pad=16)
    detections = detector.detect_windows([('cat.jpg', [(0, 0, 100, 120)])])

A window is (ymin, xmin, ymax, xmax) in pixels.
"""
import numpy as np

from . import io as caffe_io
from ._dlcaffe import TEST, Net
from .classifier import input_transformer

__all__ = ["Detector"]


class Detector(Net):
    """A Net (made for caffe.TEST from model_file and pretrained_file) with
    a caffe.io.Transformer for its first input (transpose (2, 0, 1), then
    channel_swap, raw_scale, mean, input_scale as given), cropping windows
    with `context_pad` pixels of context (see configure_crop)."""

    def __init__(self, model_file, pretrained_file, mean=None, input_scale=None,
                 raw_scale=None, channel_swap=None, context_pad=None):
        Net.__init__(self, model_file, pretrained_file, TEST)
        self.transformer = input_transformer(self, mean, input_scale, raw_scale, channel_swap)
        self.configure_crop(context_pad)

    def detect_windows(self, images_windows):
        """The net's first output for windows of images: images_windows is a
        list of (image filename, list of windows). Returns one dict per window,
        in order: {'window': window, 'prediction': output array,
        'filename': image filename}."""
        images_windows = [(name, list(windows)) for name, windows in images_windows]
        crops = []
        for filename, windows in images_windows:
            image = caffe_io.load_image(filename).astype(np.float32)
            for window in windows:
                crops.append(self.crop(image, window))
        if not crops:
            return []
        in_ = self.inputs[0]
        net_input = np.zeros((len(crops), crops[0].shape[2]) + tuple(self.blobs[in_].data.shape[2:]),
                             dtype=np.float32)
        for index, crop in enumerate(crops):
            net_input[index] = self.transformer.preprocess(in_, crop)
        predictions = self.forward_all(**{in_: net_input})[self.outputs[0]]
        detections = []
        index = 0
        for filename, windows in images_windows:
            for window in windows:
                detections.append({"window": window, "prediction": predictions[index],
                                   "filename": filename})
                index += 1
        return detections

    def detect_selective_search(self, image_fnames):
        """pycaffe runs R-CNN's selective search (a MATLAB program) for the
        windows; it is not part of dlcaffe. Compute windows with a proposal
        method of your choice and call detect_windows. Raises
        NotImplementedError unless the selective_search_ijcv_with_python
        module is installed, which is then used as pycaffe uses it."""
        try:
            import selective_search_ijcv_with_python as selective_search
        except ImportError:
            raise NotImplementedError(
                "detect_selective_search needs the selective_search_ijcv_with_python module "
                "(and MATLAB), which dlcaffe does not provide: compute windows with another "
                "proposal method and call detect_windows([(filename, windows), ...])") from None
        import os
        image_fnames = [os.path.abspath(f) for f in image_fnames]
        windows_list = selective_search.get_windows(image_fnames, cmd="selective_search_rcnn")
        return self.detect_windows(zip(image_fnames, windows_list))

    def crop(self, im, window):
        """The part of image `im` (H x W x C) in `window` (ymin, xmin, ymax,
        xmax; ymax and xmax excluded). With context_pad, the window is
        enlarged so that after warping to the input size it has context_pad
        pixels of context on each side, clipped to the image; what falls
        outside the image is filled with the mean (crop_mean), and the result
        has the input's size (crop_dims)."""
        window = np.asarray(window)
        plain = im[int(window[0]):int(window[2]), int(window[1]):int(window[3])]
        if not self.context_pad:
            return plain
        crop_size = self.blobs[self.inputs[0]].data.shape[-1]  # square inputs assumed
        scale = crop_size / (1.0 * crop_size - self.context_pad * 2)
        half_h = (window[2] - window[0] + 1) / 2.0
        half_w = (window[3] - window[1] + 1) / 2.0
        center = np.array((window[0] + half_h, window[1] + half_w))
        box = np.round(np.tile(center, 2) + scale * np.array((-half_h, -half_w, half_h, half_w)))
        scale_h = crop_size / (box[2] - box[0] + 1)
        scale_w = crop_size / (box[3] - box[1] + 1)
        pad_y = int(round(max(0, -box[0]) * scale_h))  # rows outside the image
        pad_x = int(round(max(0, -box[1]) * scale_w))
        im_h, im_w = im.shape[:2]
        box = np.clip(box, 0.0, [im_h, im_w, im_h, im_w])
        clip_h = box[2] - box[0] + 1
        clip_w = box[3] - box[1] + 1
        if clip_h <= 0 or clip_w <= 0:
            raise ValueError("crop: window %s lies outside the image (%d x %d)"
                             % (list(window), im_h, im_w))
        crop_h = min(int(round(clip_h * scale_h)), crop_size - pad_y)
        crop_w = min(int(round(clip_w * scale_w)), crop_size - pad_x)
        context = im[int(box[0]):int(box[2]), int(box[1]):int(box[3])]
        context = caffe_io.resize_image(context, (crop_h, crop_w))
        out = np.ones(self.crop_dims, dtype=np.float32) * self.crop_mean
        out[pad_y:pad_y + crop_h, pad_x:pad_x + crop_w] = context
        return out

    def configure_crop(self, context_pad):
        """Sets crop_dims (the input's item shape in image order, H x W x C),
        context_pad, and crop_mean: the mean in the image's own space (before
        the raw scale and channel swap), which fills context outside the
        image; zeros without a mean."""
        in_ = self.inputs[0]
        transpose = self.transformer.transpose.get(in_)
        item_shape = np.array(self.blobs[in_].data.shape[1:])
        inverse = np.argsort(transpose) if transpose is not None else np.arange(len(item_shape))
        self.crop_dims = item_shape[inverse]
        self.context_pad = context_pad
        if not self.context_pad:
            return
        mean = self.transformer.mean.get(in_)
        if mean is None:
            self.crop_mean = np.zeros(self.crop_dims, dtype=np.float32)
            return
        crop_mean = np.array(mean, dtype=np.float32).transpose(inverse)
        channel_swap = self.transformer.channel_swap.get(in_)
        if channel_swap is not None:
            crop_mean = crop_mean[:, :, np.argsort(channel_swap)]
        raw_scale = self.transformer.raw_scale.get(in_)
        if raw_scale is not None:
            crop_mean = crop_mean / raw_scale
        self.crop_mean = crop_mean
