#!/usr/bin/python3
"""Inference speed of the Caffe detectors in models/ssd and
models/faster_rcnn (random weights; speed does not depend on them), dlcaffe
on its default OpenCL device against OpenCV's DNN module on the CPU
(cv2.dnn, Debian's python3-opencv, its default backend and all its
threads), in one command, on the same input:

    PYTHONPATH=build/python /usr/bin/python3 bench/detector_speed_opencv.py [--runs 20]

Prints each net's median forward time in both and their ratio (OpenCV's
time over dlcaffe's: above 1, dlcaffe is faster). The device is what
dlcaffe reports; on a machine without a GPU that is PoCL on the same CPU.
"""
import argparse
import os
import statistics
import sys
import time

import cv2
import numpy as np

import caffe

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from conftest import random_detector_weights  # noqa: E402

PHOTO = os.path.join(ROOT, "..", "shared", "data", "images", "fish-bike.jpg")


def median_ms(run, runs):
    run()  # the first: kernels built, buffers allocated
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    image = cv2.imread(PHOTO)
    nets = [
        ("res10-shaped SSD 300x300", "models/ssd/res10_300x300_deploy.prototxt", 0.25,
         {"data": cv2.dnn.blobFromImage(image, 1.0, (300, 300), (104.0, 177.0, 123.0))}, ["detection_out"]),
        ("MobileNet-shaped SSD 300x300", "models/ssd/mobilenet_ssd_deploy.prototxt", 2.0,
         {"data": cv2.dnn.blobFromImage(image, 1.0, (300, 300), (104.0, 117.0, 123.0))}, ["detection_out"]),
        ("Faster R-CNN (narrow ZF) 224x288", "models/faster_rcnn/test.prototxt", 1.0,
         {"data": cv2.dnn.blobFromImage(image, 1.0, (288, 224), (102.98, 115.95, 122.77)),
          "im_info": np.array([[224, 288, 1.0]], np.float32)}, ["cls_prob", "bbox_pred"]),
    ]
    print("dlcaffe on %s; OpenCV %s on %d threads" % (caffe.current_device(), cv2.__version__,
                                                       cv2.getNumThreads()))
    for title, model, gain, inputs, outputs in nets:
        model = os.path.join(ROOT, model)
        weights = "/tmp/detector_speed_weights.caffemodel"
        random_detector_weights(model, weights, 1, gain)
        ours = caffe.Net(model, weights, caffe.TEST)
        for name, value in inputs.items():
            ours.blobs[name].data[...] = value

        def run_ours():
            ours.forward()
            for name in outputs:
                ours.blobs[name].data  # read back, as a user does

        theirs = cv2.dnn.readNetFromCaffe(model, weights)

        def run_theirs():
            for name, value in inputs.items():
                theirs.setInput(value, name)
            theirs.forward(outputs if len(outputs) > 1 else outputs[0])

        ours_ms, theirs_ms = median_ms(run_ours, args.runs), median_ms(run_theirs, args.runs)
        print("%-34s dlcaffe %8.2f ms   OpenCV %8.2f ms   ratio %.2f" % (title, ours_ms, theirs_ms, theirs_ms / ours_ms))


if __name__ == "__main__":
    main()
