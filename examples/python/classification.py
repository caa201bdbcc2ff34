#!/usr/bin/env python3
"""Classifying images with a deploy net, step by step (the steps of Caffe's
00-classification notebook).

What it shows:
  * loading a net with its weights: caffe.Net(model, caffe.TEST, weights=...);
  * caffe.io.Transformer: from load_image's H x W x C RGB floats in [0, 1]
    to the net's C x H x W input (set_transpose, set_channel_swap to BGR,
    set_raw_scale to [0, 255], set_mean, optionally set_input_scale);
  * reshaping the input blob to a batch of all the images, preprocessing
    them into it, one forward, and the top-k classes of each image;
  * every blob's and every parameter's shape;
  * the first convolution layer's filters and its feature maps for the first
    image, saved as PNG pictures with matplotlib.

By default the net is CaffeNet (models/bvlc_reference_caffenet/deploy.prototxt)
on ../shared/data/images/cat.jpg. Its trained weights are not shipped: get
bvlc_reference_caffenet.caffemodel from Caffe's model zoo and pass --weights,
with --labels a file of class names, one a line (e.g. Caffe's
data/ilsvrc12/synset_words.txt). Without --weights the net gets random weights
and its predictions mean nothing, but every step still runs:

    PYTHONPATH=build/python python3 examples/python/classification.py --out /tmp/classify \
        --weights bvlc_reference_caffenet.caffemodel --labels synset_words.txt

A gray-image net works too: with a one-channel input the images are loaded
gray and no channel swap is made. LeNet trained by mnist_python_data_layer.py,
on MNIST digits saved as PNG images (scaled as in training: x / 256):

    PYTHONPATH=build/python python3 examples/python/classification.py --out /tmp/classify \
        --model models/lenet/lenet.prototxt --weights /tmp/lenet/lenet_python_data.caffemodel \
        --mean none --input_scale 0.00390625 --images digit0.png digit1.png
"""
import argparse
import math
import os

import numpy as np

import matplotlib
matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

import caffe  # noqa: E402
from caffe.proto import caffe_pb2  # noqa: E402

REPO_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_MODEL = os.path.join(REPO_DIR, "models", "bvlc_reference_caffenet", "deploy.prototxt")
DEFAULT_IMAGE = os.path.join(REPO_DIR, "..", "shared", "data", "images", "cat.jpg")
# ImageNet's mean pixel in BGR order (the per-channel average of Caffe's
# ilsvrc_2012_mean.npy), which CaffeNet's training subtracted.
IMAGENET_MEAN_BGR = "104,117,123"


def read_mean(text):
    """--mean as a per-channel vector: "none", comma-separated values, or a
    .binaryproto / .npy mean image (averaged over its pixels, as the notebook
    does, so that it fits any input size)."""
    if text.lower() == "none":
        return None
    if text.endswith(".binaryproto"):
        with open(text, "rb") as f:
            image = caffe.io.blobproto_to_array(caffe_pb2.BlobProto.FromString(f.read()))[0]
        return image.mean(axis=(1, 2))
    if text.endswith(".npy"):
        image = np.load(text)
        return image.mean(axis=(1, 2)) if image.ndim == 3 else image
    return np.array([float(value) for value in text.split(",")])


def randomize(net, seed, std=0.01):
    """Gaussian weights (std 0.01, as CaffeNet's training began) and zero
    biases: stand-ins for trained weights."""
    rng = np.random.default_rng(seed)
    for blobs in net.params.values():
        weights = blobs[0].data
        weights[...] = rng.standard_normal(weights.shape, dtype=np.float32) * std
        for bias in list(blobs)[1:]:
            bias.data[...] = 0


def make_transformer(net, input_name, args):
    """The notebook's Transformer settings for the net's input."""
    shape = net.blobs[input_name].data.shape
    transformer = caffe.io.Transformer({input_name: shape})
    transformer.set_transpose(input_name, (2, 0, 1))  # H x W x C -> C x H x W
    if shape[1] == 3 and args.channel_swap.lower() != "none":
        # load_image gives RGB; Caffe's models were trained on BGR (OpenCV) images.
        transformer.set_channel_swap(input_name, [int(c) for c in args.channel_swap.split(",")])
    transformer.set_raw_scale(input_name, args.raw_scale)  # [0, 1] -> [0, 255]
    mean = read_mean(args.mean)
    if mean is not None:
        transformer.set_mean(input_name, mean)
    if args.input_scale is not None:
        transformer.set_input_scale(input_name, args.input_scale)
    return transformer


def tile(images):
    """n images (n, h, w) or (n, h, w, 3) as one roughly square picture,
    scaled to [0, 1], with a 1-pixel light border between them."""
    images = (images - images.min()) / max(float(images.max() - images.min()), 1e-12)
    count = len(images)
    columns = int(math.ceil(math.sqrt(count)))
    rows = int(math.ceil(count / columns))
    height, width = images.shape[1:3]
    picture = np.ones((rows * (height + 1) - 1, columns * (width + 1) - 1) + images.shape[3:],
                      dtype=np.float32)
    for i, image in enumerate(images):
        top, left = (i // columns) * (height + 1), (i % columns) * (width + 1)
        picture[top:top + height, left:left + width] = image
    return picture


def save_picture(picture, title, path):
    figure, axes = plt.subplots(figsize=(6, 6))
    axes.imshow(picture, cmap="gray", interpolation="nearest")
    axes.set_title(title)
    axes.axis("off")
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    print("saved %s" % path)


def show_first_convolution(net, image_index, swapped_channels, out):
    """The first Convolution layer's filters and its output maps for one image."""
    name = next(layer for layer, module in net.layer_dict.items() if module.type == "Convolution")
    filters = net.params[name][0].data  # (N, C, kh, kw)
    if filters.shape[1] == 3:
        filters = filters.transpose(0, 2, 3, 1)  # colour filters as (N, kh, kw, 3)
        if swapped_channels:
            filters = filters[..., ::-1]  # BGR back to RGB for display
    else:
        filters = filters[:, 0]  # one input channel: (N, kh, kw)
    save_picture(tile(filters), "%s filters %s" % (name, net.params[name][0].data.shape),
                 os.path.join(out, "%s_filters.png" % name))
    top = net.top_names[name][0]
    maps = net.blobs[top].data[image_index]  # (N, h, w)
    save_picture(tile(maps), "%s output of image %d %s" % (top, image_index, maps.shape),
                 os.path.join(out, "%s_feature_maps.png" % top))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="deploy prototxt (default: CaffeNet)")
    parser.add_argument("--weights", help="the trained .caffemodel (default: random weights)")
    parser.add_argument("--labels", help="class names, one a line (default: class numbers)")
    parser.add_argument("--images", nargs="+", default=[DEFAULT_IMAGE], help="image files")
    parser.add_argument("--out", required=True, help="folder for the PNG pictures")
    parser.add_argument("--mean", default=IMAGENET_MEAN_BGR,
                        help="per-channel mean, comma-separated, in the net's channel order; "
                             "or a .binaryproto / .npy mean image; or none (default: ImageNet's "
                             "BGR mean %s)" % IMAGENET_MEAN_BGR)
    parser.add_argument("--raw_scale", type=float, default=255.0,
                        help="factor from load_image's [0, 1] (default 255)")
    parser.add_argument("--input_scale", type=float, help="factor after the mean (default none)")
    parser.add_argument("--channel_swap", default="2,1,0",
                        help="channel order for 3-channel nets (default RGB -> BGR: 2,1,0; none)")
    parser.add_argument("--top_k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1, help="seeds the random weights")
    parser.add_argument("--cpu", action="store_true", help="run on an OpenCL CPU device")
    args = parser.parse_args()

    if args.cpu:
        caffe.set_mode_cpu()
    os.makedirs(args.out, exist_ok=True)

    # 1. The net and its weights.
    if args.weights:
        net = caffe.Net(args.model, caffe.TEST, weights=args.weights)
    else:
        print("no --weights: %s runs with random weights, so its predictions mean nothing "
              "(pass the trained .caffemodel with --weights)" % os.path.basename(args.model))
        net = caffe.Net(args.model, caffe.TEST)
        randomize(net, args.seed)
    input_name, output_name = net.inputs[0], net.outputs[0]
    labels = None
    if args.labels:
        with open(args.labels) as f:
            labels = [line.strip() for line in f]

    # 2. Preprocessing: the input blob as a batch of all the images.
    transformer = make_transformer(net, input_name, args)
    _, channels, height, width = net.blobs[input_name].data.shape
    net.blobs[input_name].reshape(len(args.images), channels, height, width)
    for i, path in enumerate(args.images):
        image = caffe.io.load_image(path, color=channels == 3)
        net.blobs[input_name].data[i] = transformer.preprocess(input_name, image)

    # 3. Classification: one forward pass for the whole batch.
    probabilities = net.forward()[output_name]
    print("%s: %s" % (output_name, probabilities.shape))
    for path, probs in zip(args.images, probabilities.reshape(len(args.images), -1)):
        print("image %s (probabilities sum to %.4f)" % (os.path.basename(path), probs.sum()))
        for rank, label in enumerate(probs.argsort()[::-1][:args.top_k], 1):
            name = " " + labels[label] if labels else ""
            print("  %d. %.4f  %d%s" % (rank, probs[label], label, name))

    # 4. What is inside: every blob (N, C, H, W) and parameter (weights, bias).
    print("blobs:")
    for name, blob in net.blobs.items():
        print("  %-10s %s" % (name, blob.data.shape))
    print("params:")
    for name, blobs in net.params.items():
        print("  %-10s %s" % (name, "  ".join(str(b.data.shape) for b in blobs)))

    # 5. Pictures: the first convolution's filters and what it made of image 0.
    show_first_convolution(net, 0, input_name in transformer.channel_swap, args.out)


if __name__ == "__main__":
    main()
