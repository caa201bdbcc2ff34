#!/usr/bin/env python3
"""Net surgery: turning LeNet's InnerProduct layers into convolutions.

An InnerProduct layer over a C x H x W input computes the same numbers as a
Convolution with an H x W kernel over that input: its weight matrix (N, C*H*W)
is the convolution's filters (N, C, H, W) in another shape. Made
convolutional, a classifier of 28x28 digits takes larger images and returns a
map of class scores, one for each 28x28 window (every 4 pixels here, LeNet's
two poolings' stride).

What it shows:
  * editing net descriptions with caffe_pb2: LeNet's deploy net
    (models/lenet/lenet.prototxt) at batch 1, and a fully convolutional copy
    whose ip1 becomes "ip1-conv" (kernel = the size of pool2's map, 4x4) and
    ip2 becomes "ip2-conv" (1x1);
  * transplanting the parameters through net.params[...].data, reshaping
    where the layer changed;
  * checking that both nets give the same scores on a 28x28 digit;
  * reshaping an input blob (blob.reshape + net.reshape()) and running the
    convolutional net on a mosaic of test digits, printing the argmax map.

Run it with trained weights (from mnist_python_data_layer.py), or without
--weights to see the surgery with random weights:

    PYTHONPATH=build/python python3 examples/python/net_surgery.py \
        --weights /tmp/lenet/lenet_python_data.caffemodel --out /tmp/surgery

It writes lenet_deploy.prototxt, lenet_full_conv.prototxt and
lenet_full_conv.caffemodel into --out.
"""
import argparse
import copy
import os

import numpy as np
from google.protobuf import text_format

import caffe
from caffe.proto import caffe_pb2
import mnist_files

REPO_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LENET_DEPLOY = os.path.join(REPO_DIR, "models", "lenet", "lenet.prototxt")
# InnerProduct layer -> the name of the Convolution that replaces it.
SURGERY = {"ip1": "ip1-conv", "ip2": "ip2-conv"}


def deploy_net(size):
    """LeNet's deploy net with a 1 x 1 x size x size input."""
    net = caffe_pb2.NetParameter()
    with open(LENET_DEPLOY) as f:
        text_format.Merge(f.read(), net)
    shape = net.layer[0].input_param.shape[0]
    shape.dim[:] = [1, 1, size, size]
    return net


def fully_convolutional(deploy, classifier, size):
    """A copy of the deploy net with each InnerProduct of SURGERY replaced by
    a Convolution whose kernel covers the whole input map the InnerProduct
    sees in `classifier` (a Net of the deploy description). The top blobs
    keep their names, so the rest of the net is unchanged."""
    net = copy.deepcopy(deploy)
    net.name = deploy.name + "FullConv"
    net.layer[0].input_param.shape[0].dim[:] = [1, 1, size, size]
    for layer in net.layer:
        if layer.name not in SURGERY:
            continue
        # What the InnerProduct sees, as C x H x W (a flat (N, C) input is C x 1 x 1).
        seen = classifier.blobs[layer.bottom[0]].data.shape[1:]
        channels, height, width = seen + (1,) * (3 - len(seen))
        ip = layer.inner_product_param
        conv = caffe_pb2.ConvolutionParameter(num_output=ip.num_output, kernel_h=height,
                                              kernel_w=width)
        conv.weight_filler.CopyFrom(ip.weight_filler)
        conv.bias_filler.CopyFrom(ip.bias_filler)
        print("%s: InnerProduct over %dx%dx%d -> %s: Convolution with %d %dx%d kernels"
              % (layer.name, channels, height, width, SURGERY[layer.name],
                 ip.num_output, height, width))
        layer.ClearField("inner_product_param")
        layer.name = SURGERY[layer.name]
        layer.type = "Convolution"
        layer.convolution_param.CopyFrom(conv)
    return net


def transplant(classifier, conv_net):
    """Copies every parameter of the classifier into the convolutional net:
    as is where the layer is the same, reshaped where it became a convolution
    (the (N, C*H*W) matrix and the (N, C, H, W) filters hold the same numbers
    in the same order)."""
    for name, blobs in classifier.params.items():
        target = conv_net.params[SURGERY.get(name, name)]
        for source_blob, target_blob in zip(blobs, target):
            if source_blob.data.shape != target_blob.data.shape:
                print("  %s %s -> %s %s" % (name, source_blob.data.shape,
                                            SURGERY[name], target_blob.data.shape))
            target_blob.data[...] = source_blob.data.reshape(target_blob.data.shape)


def write_text(path, message):
    with open(path, "w") as f:
        f.write(text_format.MessageToString(message))
    return path


def mosaic_of(images, grid):
    """grid x grid images (N >= grid*grid, 28x28) tiled into one image."""
    rows = [np.hstack(images[r * grid:(r + 1) * grid]) for r in range(grid)]
    return np.vstack(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", help="a trained LeNet .caffemodel (default: random weights)")
    parser.add_argument("--out", required=True, help="folder for the prototxts and weights")
    parser.add_argument("--mnist_dir", help="MNIST's idx files (default: $MNIST_DIR, "
                                            "else ../shared/data/mnist)")
    parser.add_argument("--grid", type=int, default=2,
                        help="the mosaic is grid x grid test digits (default 2: 56x56 pixels)")
    parser.add_argument("--first", type=int, default=0,
                        help="index of the mosaic's first digit in the test set")
    parser.add_argument("--seed", type=int, default=1, help="seeds the random weights")
    parser.add_argument("--cpu", action="store_true", help="run on an OpenCL CPU device")
    args = parser.parse_args()

    if args.cpu:
        caffe.set_mode_cpu()
    caffe.set_random_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    size = 28 * args.grid

    # The classifier: LeNet's deploy net on one 28x28 digit.
    deploy = deploy_net(28)
    deploy_path = write_text(os.path.join(args.out, "lenet_deploy.prototxt"), deploy)
    if args.weights:
        classifier = caffe.Net(deploy_path, caffe.TEST, weights=args.weights)
    else:
        print("no --weights: the surgery on random weights (the argmax map means nothing)")
        classifier = caffe.Net(deploy_path, caffe.TEST)
    print("classifier params: " + ", ".join("%s %s" % (name, blobs[0].data.shape)
                                            for name, blobs in classifier.params.items()))

    # The surgery: a new description, then the parameters moved across.
    conv_path = write_text(os.path.join(args.out, "lenet_full_conv.prototxt"),
                           fully_convolutional(deploy, classifier, size))
    conv_net = caffe.Net(conv_path, caffe.TEST)
    print("transplanting parameters:")
    transplant(classifier, conv_net)
    conv_weights = os.path.join(args.out, "lenet_full_conv.caffemodel")
    conv_net.save(conv_weights)

    # Check: on a 28x28 digit both nets compute the same scores.
    images, labels = mnist_files.load("test", args.mnist_dir)
    images = images.astype(np.float32) / 256  # as LeNet was trained
    digit = images[args.first][np.newaxis, np.newaxis]
    classifier.forward(data=digit)
    conv_net.blobs["data"].reshape(1, 1, 28, 28)
    conv_net.reshape()
    conv_net.forward(data=digit)
    print("classifier scores %s, convolutional net scores %s"
          % (classifier.blobs["ip2"].data.shape, conv_net.blobs["ip2"].data.shape))
    for blob in ("ip2", "prob"):
        difference = np.abs(classifier.blobs[blob].data.ravel()
                            - conv_net.blobs[blob].data.ravel()).max()
        print("max abs difference of %s on 28x28: %.3g" % (blob, difference))

    # The convolutional net on a mosaic of digits: a map of class scores.
    first, count = args.first, args.grid ** 2
    mosaic = mosaic_of(images[first:first + count], args.grid)
    conv_net.blobs["data"].reshape(1, 1, size, size)
    conv_net.reshape()
    probs = conv_net.forward(data=mosaic[np.newaxis, np.newaxis])["prob"]
    print("mosaic %dx%d of test digits %s" % (size, size, labels[first:first + count].tolist()))
    print("score map shape: %s" % (probs.shape,))
    argmax = probs[0].argmax(axis=0)
    print("argmax map:")
    for row in argmax:
        print("  " + " ".join(str(d) for d in row))
    # A digit's window starts at a multiple of 28 pixels: map cell 28/4 = 7 apart.
    step = 28 // 4
    tiles = [int(argmax[r * step, c * step]) for r in range(args.grid) for c in range(args.grid)]
    print("at the digits' windows: %s (true %s)" % (tiles, labels[first:first + count].tolist()))
    print("written: %s, %s, %s" % (deploy_path, conv_path, conv_weights))


if __name__ == "__main__":
    main()
