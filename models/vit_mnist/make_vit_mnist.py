#!/usr/bin/env python3
"""Writes the vit_mnist prototxts: a small Vision Transformer in Caffe layers.

  PYTHONPATH=build/python /usr/bin/python3 models/vit_mnist/make_vit_mnist.py

The net (the defaults): random 24 x 24 crops of the 28 x 28 digits in
training (the centre crop in testing); a convolutional stem (a 3x3 stride-2
Convolution of --stem channels and a GELU, 12 x 12) and the patch embedding
(a Convolution of kernel --patch, stride --stride to --width channels, 3 x 3
overlapping patches); the (N, D, h, w) map turned into tokens (N, h*w, D) by
Reshape and Permute; learned positions (a Bias of a (T, D) table); pre-LN
blocks (LayerNorm, one InnerProduct to Q, K and V, Slice, the fused
non-causal Attention, a projection, a residual; LayerNorm, a GELU MLP of
--mlp x the width, a residual); a final LayerNorm, the mean over the tokens
(Reduce MEAN) and an InnerProduct to the 10 classes.

--stem 0 --crop 28 --patch 7 gives the plain ViT (7x7 patches, 16 tokens).

Writes train_val.prototxt (Caffe's MNIST LMDBs, pixels scaled to [0, 1]),
deploy.prototxt (an input of 1 x 1 x crop x crop, probabilities out) and
solver.prototxt (AdamW, a linear warm-up, cosine decay to 0).
"""
import argparse
import os
import sys

import caffe
from caffe import layers as L, params as P

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pre_ln_block import pre_ln_block  # noqa: E402  (models/pre_ln_block.py)


def linear(bottom, width, std, axis=2):
    """A position-wise InnerProduct over the last axis of (N, T, D)."""
    return L.InnerProduct(bottom, num_output=width, axis=axis,
                          weight_filler=dict(type='gaussian', std=std),
                          bias_filler=dict(type='constant', value=0),
                          param=[dict(), dict(decay_mult=0)])


def layer_norm(bottom):
    # Scale and shift take no weight decay.
    return L.LayerNorm(bottom, layer_norm_param=dict(axis=-1),
                       param=[dict(decay_mult=0), dict(decay_mult=0)])


def vit(n, data, a):
    """The transformer from images (N, 1, crop, crop) to logits (N, 10) on NetSpec n."""
    std = 0.02
    if a.stem:
        # An optional convolutional stem (ViT-C's early convolutions): a
        # stride-2 3x3 convolution and a GELU before the patch embedding.
        n.stem = L.Convolution(data, num_output=a.stem, kernel_size=3, stride=2, pad=1,
                               weight_filler=dict(type='msra'),
                               bias_filler=dict(type='constant', value=0),
                               param=[dict(), dict(decay_mult=0)])
        n.stem_gelu = L.GELU(n.stem, in_place=True)
        data = n.stem_gelu
    n.patches = L.Convolution(data, num_output=a.width, kernel_size=a.patch, stride=a.stride,
                              weight_filler=dict(type='xavier'),
                              bias_filler=dict(type='constant', value=0),
                              param=[dict(), dict(decay_mult=0)],
                              **(dict(pad=a.pad) if a.pad else {}))
    n.patches_flat = L.Reshape(n.patches, shape=dict(dim=[0, 0, -1]))  # (N, D, T)
    n.tokens = L.Permute(n.patches_flat, permute_param=dict(order=[0, 2, 1]))  # (N, T, D)
    # Learned positions: a (T, D) table added to every image's tokens.
    n.x0 = L.Bias(n.tokens, bias_param=dict(axis=1, num_axes=2,
                                            filler=dict(type='gaussian', std=std)),
                  param=[dict(decay_mult=0)])
    x = n.x0
    for i in range(a.layers):
        x = pre_ln_block(n, x, 'b%d_' % i, a.width, a.heads, causal=False,
                         mlp_width=a.mlp * a.width, std=std, projection_std=std,
                         linear=linear, layer_norm=layer_norm)
    n.ln_f = layer_norm(x)
    n.pooled = L.Reduce(n.ln_f, reduce_param=dict(operation=P.Reduce.MEAN, axis=[1],
                                                   keepdims=False))  # (N, D)
    n.logits = linear(n.pooled, 10, std, axis=1)
    return n.logits


def transform(a):
    # With --crop: random crops of the 28 x 28 images in training (shifts
    # of up to (28 - crop) / 2 pixels), the centre crop in testing.
    return dict(scale=0.00390625, **(dict(crop_size=a.crop) if a.crop < 28 else {}))


def train_val(a):
    n = caffe.NetSpec()
    tops = {}
    for phase, source, batch in ((caffe.TRAIN, 'mnist_train_lmdb', a.batch),
                                 (caffe.TEST, 'mnist_test_lmdb', a.test_batch)):
        tops[phase] = L.Data(source=os.path.join(a.data, source), backend=P.Data.LMDB,
                             batch_size=batch, transform_param=transform(a),
                             ntop=2, include=dict(phase=phase))
    n.data, n.label = tops[caffe.TRAIN]
    logits = vit(n, n.data, a)
    n.loss = L.SoftmaxWithLoss(logits, n.label)
    n.accuracy = L.Accuracy(logits, n.label, include=dict(phase=caffe.TEST))
    # Both phases' Data layers make the tops "data" and "label" (as Caffe's
    # examples): the test one is made apart and placed after the train one.
    test = caffe.NetSpec()
    test.data, test.label = tops[caffe.TEST]
    proto, test_layer = n.to_proto(), test.to_proto().layer[0]
    net = caffe.proto.caffe_pb2.NetParameter(name='vit_mnist')
    net.layer.extend([proto.layer[0], test_layer] + list(proto.layer[1:]))
    return str(net)


def deploy(a):
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, a.crop, a.crop]))
    n.prob = L.Softmax(vit(n, n.data, a))
    net = n.to_proto()
    net.name = 'vit_mnist'
    return str(net)


def solver(a):
    return '\n'.join([
        '# vit_mnist: AdamW, a linear warm-up, cosine decay; %d iterations of batch %d'
        % (a.iterations, a.batch),
        '# (%.1f epochs), then one test over the 10,000 test images.'
        % (a.iterations * a.batch / 60000.0),
        'net: "%s"' % os.path.join(a.out, 'train_val.prototxt'),
        'test_iter: %d' % (10000 // a.test_batch),
        'test_interval: %d' % a.iterations,
        'test_initialization: false',
        'type: "AdamW"',
        'base_lr: %g' % a.lr,
        'momentum: 0.9',
        'momentum2: 0.999',
        'weight_decay: %g' % a.weight_decay,
        'lr_policy: "cosine"',
        'min_lr: %g' % a.min_lr,
        'warmup_iter: %d' % a.warmup,
        'max_iter: %d' % a.iterations,
        'display: %d' % a.display,
        'clip_gradients: 1',
        'random_seed: 1701',
        'snapshot: 0',
        'snapshot_prefix: "%s"' % os.path.join(a.out, 'vit_mnist'),
        ''])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--data', default='examples/mnist',
                        help='the folder of mnist_train_lmdb and mnist_test_lmdb')
    parser.add_argument('--out', default='models/vit_mnist')
    parser.add_argument('--patch', type=int, default=6, help='patch (kernel) size')
    parser.add_argument('--stride', type=int, default=3, help='patch stride (0: --patch)')
    parser.add_argument('--pad', type=int, default=0)
    parser.add_argument('--stem', type=int, default=16,
                        help='channels of a 3x3 stride-2 convolutional stem (0: none)')
    parser.add_argument('--crop', type=int, default=24,
                        help='train on random crops of this size (test: the centre crop)')
    parser.add_argument('--layers', type=int, default=2)
    parser.add_argument('--width', type=int, default=64)
    parser.add_argument('--heads', type=int, default=4)
    parser.add_argument('--mlp', type=int, default=4, help='MLP width as a multiple of --width')
    parser.add_argument('--batch', type=int, default=64)
    parser.add_argument('--test_batch', type=int, default=100)
    parser.add_argument('--lr', type=float, default=2e-3)
    parser.add_argument('--min_lr', type=float, default=0)
    parser.add_argument('--weight_decay', type=float, default=0.05)
    parser.add_argument('--warmup', type=int, default=100)
    parser.add_argument('--iterations', type=int, default=3000)
    parser.add_argument('--display', type=int, default=100)
    a = parser.parse_args()
    if not a.stride:
        a.stride = a.patch
    if a.width % a.heads:
        parser.error('--width must split into --heads')
    if 10000 % a.test_batch:
        parser.error('--test_batch must divide 10000')
    os.makedirs(a.out, exist_ok=True)
    for name, text in (('train_val.prototxt', train_val(a)), ('deploy.prototxt', deploy(a)),
                       ('solver.prototxt', solver(a))):
        with open(os.path.join(a.out, name), 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
