#!/usr/bin/env python3
"""Fine-tuning a trained LeNet on a new label set, with a Python step loop.

A LeNet trained on the ten digits (e.g. by mnist_python_data_layer.py) is
fine-tuned to a new task on the same images:

    parity   2 labels: even digits -> 0, odd digits -> 1
    pairs    5 labels: {0,1} -> 0, {2,3} -> 1, ..., {8,9} -> 4

What it shows:
  * the net written with caffe.NetSpec, fed from numpy through a MemoryData
    layer and net.set_input_arrays (training and test images);
  * Caffe's fine-tuning recipe: the last InnerProduct ("ip2", 10 outputs) is
    replaced by a layer with a new name ("ip2_<task>") and the new number of
    outputs, so net.copy_from(weights) copies conv1, conv2 and ip1 (matched
    by name) and leaves the new layer freshly initialized; the copied layers
    learn slower (lr_mult --copied_lr_mult) than the new one;
  * a Python loop of solver.step(1) printing the loss;
  * the same training from scratch (same net, same iterations, every layer
    at full rate) for comparison.

Run it after training LeNet (or with any LeNet .caffemodel):

    PYTHONPATH=build/python python3 examples/python/mnist_python_data_layer.py --out /tmp/lenet
    PYTHONPATH=build/python python3 examples/python/finetune_new_labels.py \
        --weights /tmp/lenet/lenet_python_data.caffemodel --out /tmp/finetune --task parity

It ends with lines such as

    fine-tuned accuracy: 0.9620 (1000 test images, 2 labels)
    from-scratch accuracy: 0.8920 (1000 test images, 2 labels)
"""
import argparse
import os

import numpy as np

import caffe
from caffe import layers as L
from caffe.proto import caffe_pb2
import mnist_files

TASKS = {
    # task -> (number of labels, digit -> new label)
    "parity": (2, lambda digits: digits % 2),
    "pairs": (5, lambda digits: digits // 2),
}


def lenet(batch_size, num_labels, new_layer, copied_lr_mult):
    """LeNet fed by a MemoryData layer, with a new last layer `new_layer`.
    The copied layers' weights learn at copied_lr_mult x base_lr (biases at
    twice that, as in Caffe's LeNet); the new layer at the full rate."""
    def rates(mult):
        return [dict(lr_mult=mult), dict(lr_mult=2 * mult)]

    xavier = dict(type="xavier")
    n = caffe.NetSpec()
    n.data, n.label = L.MemoryData(batch_size=batch_size, channels=1, height=28, width=28,
                                   ntop=2)
    n.conv1 = L.Convolution(n.data, num_output=20, kernel_size=5, weight_filler=xavier,
                            param=rates(copied_lr_mult))
    n.pool1 = L.Pooling(n.conv1, pool=caffe.params.Pooling.MAX, kernel_size=2, stride=2)
    n.conv2 = L.Convolution(n.pool1, num_output=50, kernel_size=5, weight_filler=xavier,
                            param=rates(copied_lr_mult))
    n.pool2 = L.Pooling(n.conv2, pool=caffe.params.Pooling.MAX, kernel_size=2, stride=2)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500, weight_filler=xavier,
                           param=rates(copied_lr_mult))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    setattr(n, new_layer, L.InnerProduct(n.relu1, num_output=num_labels, weight_filler=xavier,
                                         param=rates(1)))
    n.loss = L.SoftmaxWithLoss(getattr(n, new_layer), n.label)
    n.accuracy = L.Accuracy(getattr(n, new_layer), n.label)
    return n.to_proto()


def write_solver(folder, name, train_net, test_net, args):
    """A solver for the two nets; it never tests by itself (the script does)."""
    solver = caffe_pb2.SolverParameter()
    solver.train_net = os.path.join(folder, name + "_train.prototxt")
    solver.test_net.append(os.path.join(folder, name + "_test.prototxt"))
    for path, net in ((solver.train_net, train_net), (solver.test_net[0], test_net)):
        with open(path, "w") as f:
            f.write(str(net))
    solver.test_iter.append(args.test_images // args.batch_size)
    solver.test_interval = args.iters + 1
    solver.test_initialization = False
    solver.base_lr = args.base_lr
    solver.momentum = 0.9
    solver.weight_decay = 0.0005
    solver.lr_policy = "fixed"
    solver.display = 0
    solver.max_iter = args.iters
    solver.random_seed = args.seed
    solver.snapshot_prefix = os.path.join(folder, name)
    path = os.path.join(folder, name + "_solver.prototxt")
    with open(path, "w") as f:
        f.write(str(solver))
    return path


def load_split(split, count, relabel, mnist_dir):
    """`count` images of a split as (count, 1, 28, 28) float32 in [0, 1) and
    their new labels."""
    images, digits = mnist_files.load(split, mnist_dir)
    images = images[:count, np.newaxis].astype(np.float32) / 256
    return images, relabel(digits[:count].astype(np.int64)).astype(np.float32)


def train_and_test(name, args, data, weights=None):
    """Trains the task's net for args.iters steps (starting from `weights`
    if given) and returns its accuracy on the test images."""
    num_labels, _ = TASKS[args.task]
    new_layer = "ip2_" + args.task
    copied_lr_mult = args.copied_lr_mult if weights else 1.0
    solver_path = write_solver(
        args.out, name,
        lenet(args.batch_size, num_labels, new_layer, copied_lr_mult),
        lenet(args.batch_size, num_labels, new_layer, 1.0), args)
    solver = caffe.SGDSolver(solver_path)
    net, test_net = solver.net, solver.test_nets[0]  # they share their weights

    if weights:
        # copy_from matches layers by name: the new last layer is not in the
        # weights file, so it keeps its random initialization.
        with open(weights, "rb") as f:
            saved = caffe_pb2.NetParameter.FromString(f.read())
        in_file = {layer.name for layer in saved.layer if layer.blobs}
        net.copy_from(weights)
        print("%s: copied %s; newly initialized: %s"
              % (name, ", ".join(layer for layer in net.params if layer in in_file),
                 ", ".join(layer for layer in net.params if layer not in in_file)))

    net.set_input_arrays(*data["train"])
    test_net.set_input_arrays(*data["test"])
    for _ in range(args.iters):
        solver.step(1)
        if solver.iter % args.display == 0 or solver.iter == args.iters:
            print("%s iteration %d: loss %.4f" % (name, solver.iter, net.blobs["loss"].data))

    batches = args.test_images // args.batch_size
    accuracy = np.mean([test_net.forward()["accuracy"].item() for _ in range(batches)])
    net.save(os.path.join(args.out, name + ".caffemodel"))
    return accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", required=True, help="a trained LeNet .caffemodel")
    parser.add_argument("--out", required=True, help="folder for the nets, solvers and weights")
    parser.add_argument("--task", choices=sorted(TASKS), default="parity",
                        help="the new label set (default: parity)")
    parser.add_argument("--mnist_dir", help="MNIST's idx files (default: $MNIST_DIR, "
                                            "else ../shared/data/mnist)")
    parser.add_argument("--iters", type=int, default=100, help="training iterations of each run")
    parser.add_argument("--batch_size", type=int, default=50)
    parser.add_argument("--base_lr", type=float, default=0.01)
    parser.add_argument("--copied_lr_mult", type=float, default=0.1,
                        help="learning rate multiplier of the copied layers when fine-tuning")
    parser.add_argument("--train_images", type=int, default=2000,
                        help="training images (a multiple of --batch_size)")
    parser.add_argument("--test_images", type=int, default=1000,
                        help="test images (a multiple of --batch_size)")
    parser.add_argument("--display", type=int, default=25, help="print the loss every N iterations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cpu", action="store_true", help="run on an OpenCL CPU device")
    args = parser.parse_args()
    for count in ("train_images", "test_images"):
        if getattr(args, count) % args.batch_size:
            parser.error("--%s must be a multiple of --batch_size" % count)

    if args.cpu:
        caffe.set_mode_cpu()
    os.makedirs(args.out, exist_ok=True)
    num_labels, relabel = TASKS[args.task]
    data = {"train": load_split("train", args.train_images, relabel, args.mnist_dir),
            "test": load_split("test", args.test_images, relabel, args.mnist_dir)}
    print("task %s: %d labels, %d training and %d test images"
          % (args.task, num_labels, args.train_images, args.test_images))

    finetuned = train_and_test("finetuned", args, data, weights=args.weights)
    scratch = train_and_test("scratch", args, data)
    for name, accuracy in (("fine-tuned", finetuned), ("from-scratch", scratch)):
        print("%s accuracy: %.4f (%d test images, %d labels)"
              % (name, accuracy, args.test_images, num_labels))


if __name__ == "__main__":
    main()
