#!/usr/bin/env python3
"""An SSD on an image with pycaffe, as Caffe SSD's own Python example does
it: caffe.io reads the image (RGB, 0..1), a Transformer makes it the net's
input (resized, channels first, BGR, 0..255, mean subtracted); prints each
detection above the threshold ("label score xmin ymin xmax ymax", the box in
the image's pixels) and writes the image with its boxes drawn (PNG).

    python3 examples/detection/ssd_detect.py DEPLOY.prototxt WEIGHTS.caffemodel \\
        IMAGE OUTPUT.png [--mean 104,117,123] [--threshold 0.5]
"""
import argparse

import numpy as np
from PIL import Image, ImageDraw

import caffe


def preprocess(net, image, mean):
    """The net's input for `image` (caffe.io.load_image's H x W x 3 RGB in
    0..1)."""
    transformer = caffe.io.Transformer({"data": net.blobs["data"].data.shape})
    transformer.set_transpose("data", (2, 0, 1))
    transformer.set_mean("data", np.array(mean, dtype=np.float32))
    transformer.set_raw_scale("data", 255)
    transformer.set_channel_swap("data", (2, 1, 0))
    return transformer.preprocess("data", image)


def detect(net, image, mean, threshold):
    """[(label, score, xmin, ymin, xmax, ymax)] above the threshold, the box
    in the image's pixels."""
    net.blobs["data"].reshape(1, *net.blobs["data"].data.shape[1:])
    net.blobs["data"].data[...] = preprocess(net, image, mean)
    rows = net.forward()[net.outputs[0]].reshape(-1, 7)
    height, width = image.shape[:2]
    return [(int(r[1]), float(r[2]), r[3] * width, r[4] * height, r[5] * width, r[6] * height)
            for r in rows if r[1] >= 0 and r[2] >= threshold]


def draw(image, detections, path):
    picture = Image.fromarray((image * 255).round().astype(np.uint8))
    pen = ImageDraw.Draw(picture)
    for label, score, x1, y1, x2, y2 in detections:
        pen.rectangle([x1, y1, x2, y2], outline=(0, 255, 0), width=2)
        pen.text((x1 + 3, y1 + 2), "%d %.2f" % (label, score), fill=(0, 255, 0))
    picture.save(path, "PNG")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("weights")
    ap.add_argument("image")
    ap.add_argument("output")
    ap.add_argument("--mean", default="104,117,123", help="B,G,R")
    ap.add_argument("--threshold", type=float, default=0.5)
    args = ap.parse_args()
    net = caffe.Net(args.model, args.weights, caffe.TEST)
    image = caffe.io.load_image(args.image)
    detections = detect(net, image, [float(v) for v in args.mean.split(",")], args.threshold)
    for label, score, x1, y1, x2, y2 in detections:
        print("%d %.4f %.4f %.4f %.4f %.4f" % (label, score, x1, y1, x2, y2))
    draw(image, detections, args.output)


if __name__ == "__main__":
    main()
