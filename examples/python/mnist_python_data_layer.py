#!/usr/bin/env python3
"""Training LeNet with a Python data layer, stepping the solver from Python.

What it shows:
  * a data layer written in Python (mnist_data_layer.MnistDataLayer, type
    "Python") that reads MNIST's idx files itself: no LMDB to build first;
  * editing a net description with caffe_pb2: LeNet's layers are read from
    models/lenet/lenet_train_test.prototxt and only its two Data layers (TRAIN
    and TEST) are swapped for the Python layer;
  * a solver written from Python, driven one step at a time (solver.step(1))
    with the loss read from solver.net.blobs after each step;
  * testing with the solver's test net (which shares the trained weights) and
    saving the weights with net.save.

Run it from anywhere (the MNIST folder: --mnist_dir, else $MNIST_DIR, else
../shared/data/mnist next to the repository; gzipped files are fine):

    PYTHONPATH=build/python python3 examples/python/mnist_python_data_layer.py \
        --out /tmp/lenet --iters 500

It writes into --out: lenet_python_data.prototxt (the net),
lenet_python_data_solver.prototxt and lenet_python_data.caffemodel (the
trained weights, which finetune_new_labels.py, net_surgery.py and
classification.py can use), and prints lines such as

    iteration 100: loss 0.2936
    test accuracy: 0.9743 (10000 images)
"""
import argparse
import json
import os

from google.protobuf import text_format

import caffe
from caffe.proto import caffe_pb2
import mnist_files

REPO_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LENET = os.path.join(REPO_DIR, "models", "lenet", "lenet_train_test.prototxt")


def python_data_layer(phase, param):
    """A LayerParameter for MnistDataLayer in one phase, with tops data and label."""
    layer = caffe_pb2.LayerParameter(name="mnist", type="Python", top=["data", "label"])
    layer.include.add(phase=phase)
    layer.python_param.module = "mnist_data_layer"
    layer.python_param.layer = "MnistDataLayer"
    layer.python_param.param_str = json.dumps(param)
    return layer


def lenet_with_python_data(args, mnist_dir):
    """LeNet's train/test net with its Data layers replaced by MnistDataLayer."""
    net = caffe_pb2.NetParameter()
    with open(LENET) as f:
        text_format.Merge(f.read(), net)
    layers = [layer for layer in net.layer if layer.type != "Data"]
    del net.layer[:]
    net.layer.extend([
        python_data_layer(caffe_pb2.TRAIN, {"split": "train", "batch_size": args.batch_size,
                                            "seed": args.seed, "mnist_dir": mnist_dir}),
        python_data_layer(caffe_pb2.TEST, {"split": "test", "batch_size": args.test_batch_size,
                                           "mnist_dir": mnist_dir}),
    ])
    net.layer.extend(layers)
    net.name = "LeNetPythonData"
    return net


def solver_for(net_path, args):
    """Caffe's LeNet schedule (SGD, momentum 0.9, "inv" learning rate decay).
    The solver does not test by itself (test_interval past the end): the
    script runs the test net when it wants."""
    solver = caffe_pb2.SolverParameter()
    solver.net = net_path
    solver.test_iter.append(args.test_batches)
    solver.test_interval = args.iters + 1
    solver.test_initialization = False
    solver.base_lr = args.base_lr
    solver.momentum = 0.9
    solver.weight_decay = 0.0005
    solver.lr_policy = "inv"
    solver.gamma = 0.0001
    solver.power = 0.75
    solver.display = 0  # the script prints the loss itself
    solver.max_iter = args.iters
    solver.snapshot_prefix = os.path.join(args.out, "lenet_python_data")
    solver.random_seed = args.seed
    return solver


def write_text(path, message):
    with open(path, "w") as f:
        f.write(text_format.MessageToString(message))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the prototxts and weights")
    parser.add_argument("--mnist_dir", help="MNIST's idx files (default: $MNIST_DIR, "
                                            "else ../shared/data/mnist)")
    parser.add_argument("--iters", type=int, default=500, help="training iterations")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--base_lr", type=float, default=0.01)
    parser.add_argument("--display", type=int, default=50, help="print the loss every N iterations")
    parser.add_argument("--test_batches", type=int, default=100,
                        help="test batches after training (100 x 100 = the whole test set)")
    parser.add_argument("--test_batch_size", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1, help="seeds the weights and the shuffling")
    parser.add_argument("--cpu", action="store_true", help="run on an OpenCL CPU device")
    args = parser.parse_args()

    if args.cpu:
        caffe.set_mode_cpu()
    os.makedirs(args.out, exist_ok=True)
    mnist_dir = mnist_files.find_dir(args.mnist_dir)

    net_path = write_text(os.path.join(args.out, "lenet_python_data.prototxt"),
                          lenet_with_python_data(args, mnist_dir))
    solver_path = write_text(os.path.join(args.out, "lenet_python_data_solver.prototxt"),
                             solver_for(net_path, args))
    solver = caffe.get_solver(solver_path)  # a caffe.SGDSolver
    print("net: %s\nsolver: %s" % (net_path, solver_path))
    print("blobs: " + ", ".join("%s %s" % (name, tuple(blob.data.shape))
                                for name, blob in solver.net.blobs.items()))

    # Train one step at a time; after a step, the training net's blobs hold
    # that step's forward pass (its loss included).
    for _ in range(args.iters):
        solver.step(1)
        if solver.iter % args.display == 0 or solver.iter == args.iters:
            print("iteration %d: loss %.4f" % (solver.iter, solver.net.blobs["loss"].data))

    # The test net shares the trained weights; each forward draws the next test batch.
    test_net = solver.test_nets[0]
    correct = 0.0
    for _ in range(args.test_batches):
        correct += test_net.forward()["accuracy"].item() * args.test_batch_size
    images = args.test_batches * args.test_batch_size
    print("test accuracy: %.4f (%d images)" % (correct / images, images))

    weights = os.path.join(args.out, "lenet_python_data.caffemodel")
    solver.net.save(weights)
    print("weights: %s" % weights)


if __name__ == "__main__":
    main()
