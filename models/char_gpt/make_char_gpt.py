#!/usr/bin/env python3
"""Writes the char_gpt prototxts: a GPT-style decoder in Caffe layers.

  PYTHONPATH=build/python /usr/bin/python3 models/char_gpt/make_char_gpt.py \
      --vocab examples/fortunes/vocab.txt --out models/char_gpt

The net: token Embed ("wte") plus learned positions (PositionEmbedding),
pre-LN blocks (LayerNorm, one InnerProduct to Q, K and V, the fused causal
Attention, a projection, a residual; LayerNorm, a GELU MLP of 4x the width,
a residual), a final LayerNorm and a head that shares the embedding's
weights (tied), SoftmaxWithLoss over every position. The data are
convert_text's windows: a Datum of 2 x 1 x T (the tokens and the next
tokens), sliced into both.

Writes train_val.prototxt, deploy.prototxt (an input of token ids, the
logits out: what `dlcaffe generate` runs) and solver.prototxt (AdamW, a
linear warm-up, cosine decay).
"""
import argparse
import math
import os
import sys

import caffe
from caffe import layers as L, params as P

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pre_ln_block import pre_ln_block  # noqa: E402  (models/pre_ln_block.py)


def vocabulary_size(path):
    """The size in the header of convert_text's vocab.txt."""
    with open(path, encoding='utf-8') as f:
        header = f.readline()
    fields = dict(part.split('=') for part in header.split()[3:])
    if not header.startswith('# dlcaffe vocabulary:') or 'size' not in fields:
        raise SystemExit('%s: line 1 is not a dlcaffe vocabulary header: %r' % (path, header))
    return int(fields['size'])


def linear(bottom, width, std, tied_name=None, bias=True):
    """A position-wise InnerProduct over the last axis of (N, T, D)."""
    weight = dict(name=tied_name) if tied_name else dict()
    params = [weight] + ([dict(decay_mult=0)] if bias else [])
    return L.InnerProduct(bottom, num_output=width, axis=2, bias_term=bias,
                          weight_filler=dict(type='gaussian', std=std),
                          bias_filler=dict(type='constant', value=0), param=params)


def layer_norm(bottom):
    # Scale and shift take no weight decay (as GPT-2's training).
    return L.LayerNorm(bottom, param=[dict(decay_mult=0), dict(decay_mult=0)])


def decoder(n, tokens, a):
    """The blocks from token ids (N, T) to logits (N, T, V) on NetSpec n."""
    std = 0.02
    residual_std = std / math.sqrt(2 * a.layers)  # GPT-2's scaled residual init
    n.tok = L.Embed(tokens, input_dim=a.vocab_size, num_output=a.width, bias_term=False,
                    weight_filler=dict(type='gaussian', std=std), param=[dict(name='wte')])
    n.x0 = L.PositionEmbedding(n.tok, position_embedding_param=dict(
        max_positions=a.window, weight_filler=dict(type='gaussian', std=std)))
    x = n.x0
    for i in range(a.layers):
        x = pre_ln_block(n, x, 'b%d_' % i, a.width, a.heads, causal=True,
                         mlp_width=4 * a.width, std=std, projection_std=residual_std,
                         linear=linear, layer_norm=layer_norm)
    n.ln_f = layer_norm(x)
    # The head shares the token embedding's (V, D) weights.
    n.logits = linear(n.ln_f, a.vocab_size, std, tied_name='wte', bias=False)
    return n.logits


def train_val(a):
    n = caffe.NetSpec()
    for phase, source, batch in ((caffe.TRAIN, 'train_lmdb', a.batch),
                                 (caffe.TEST, 'test_lmdb', a.batch)):
        # One data top per phase under the same name, as Caffe's examples.
        data = L.Data(source=os.path.join(a.data, source), backend=P.Data.LMDB,
                      batch_size=batch, include=dict(phase=phase))
        if phase == caffe.TRAIN:
            n.window = data
        else:
            test_data = data
    n.tokens_4d, n.targets_4d = L.Slice(n.window, axis=1, ntop=2)
    n.tokens = L.Reshape(n.tokens_4d, shape=dict(dim=[0, -1]))
    n.targets = L.Reshape(n.targets_4d, shape=dict(dim=[0, -1]))
    logits = decoder(n, n.tokens, a)
    n.loss = L.SoftmaxWithLoss(logits, n.targets, softmax_param=dict(axis=2))
    n.accuracy = L.Accuracy(logits, n.targets, axis=2, include=dict(phase=caffe.TEST))
    # The held-out loss in bits per character: nats / ln 2.
    n.bpc = L.Power(n.loss, scale=1 / math.log(2), include=dict(phase=caffe.TEST))
    # Both phases' Data layers make the top "window" (as Caffe's examples):
    # the test one is made apart and placed after the train one.
    test = caffe.NetSpec()
    test.window = test_data
    proto, test_layer = n.to_proto(), test.to_proto().layer[0]
    net = caffe.proto.caffe_pb2.NetParameter(name='char_gpt')
    net.layer.extend([proto.layer[0], test_layer] + list(proto.layer[1:]))
    return str(net)


def deploy(a):
    n = caffe.NetSpec()
    n.tokens = L.Input(shape=dict(dim=[1, a.window]))
    decoder(n, n.tokens, a)
    net = n.to_proto()
    net.name = 'char_gpt'
    return str(net)


def bench_nets(a):
    """Nets fed by Input layers (random tokens in `dlcaffe bench`): a training
    net of --batch sequences and a forward net of the same batch."""
    train = caffe.NetSpec()
    train.tokens = L.Input(shape=dict(dim=[a.batch, a.window]))
    train.targets = L.Input(shape=dict(dim=[a.batch, a.window]))
    logits = decoder(train, train.tokens, a)
    train.loss = L.SoftmaxWithLoss(logits, train.targets, softmax_param=dict(axis=2))
    forward = caffe.NetSpec()
    forward.tokens = L.Input(shape=dict(dim=[a.batch, a.window]))
    decoder(forward, forward.tokens, a)
    nets = []
    for spec in (train, forward):
        net = spec.to_proto()
        net.name = 'gpt_L%d_D%d_T%d_B%d' % (a.layers, a.width, a.window, a.batch)
        nets.append(str(net))
    return nets


def solver(a):
    return '\n'.join([
        '# char_gpt on convert_text windows: AdamW, a linear warm-up, cosine decay.',
        'net: "%s"' % os.path.join(a.out, 'train_val.prototxt'),
        'test_iter: %d' % a.test_iter,
        'test_interval: %d' % a.test_interval,
        'test_initialization: false',
        'type: "AdamW"',
        'base_lr: %g' % a.lr,
        'momentum: 0.9',
        'momentum2: 0.99',
        'weight_decay: 0.1',
        'lr_policy: "cosine"',
        'min_lr: %g' % (a.lr / 10),
        'warmup_iter: %d' % a.warmup,
        'max_iter: %d' % a.iterations,
        'display: %d' % a.display,
        'clip_gradients: 1',
        'snapshot: %d' % a.iterations,
        'snapshot_prefix: "%s"' % os.path.join(a.out, 'char_gpt'),
        ''])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--vocab', help="convert_text's vocab.txt (its size sets the vocabulary)")
    parser.add_argument('--vocab_size', type=int, help='the vocabulary size, without --vocab')
    parser.add_argument('--data', default='examples/fortunes',
                        help="the folder of convert_text's train_lmdb and test_lmdb")
    parser.add_argument('--out', default='models/char_gpt')
    parser.add_argument('--layers', type=int, default=4)
    parser.add_argument('--width', type=int, default=128)
    parser.add_argument('--heads', type=int, default=4)
    parser.add_argument('--window', type=int, default=128,
                        help="convert_text's --window: the positions the model sees")
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--lr', type=float, default=3e-3)
    parser.add_argument('--warmup', type=int, default=100)
    parser.add_argument('--iterations', type=int, default=3000)
    parser.add_argument('--display', type=int, default=50)
    parser.add_argument('--test_interval', type=int, default=500)
    parser.add_argument('--test_iter', type=int, default=20)
    parser.add_argument('--bench', action='store_true',
                        help='write bench_train.prototxt and bench_forward.prototxt only '
                        '(Input layers; for dlcaffe bench)')
    a = parser.parse_args()
    if a.vocab:
        a.vocab_size = vocabulary_size(a.vocab)
    if not a.vocab_size:
        parser.error('give --vocab (or --vocab_size)')
    if a.width % a.heads:
        parser.error('--width must split into --heads')
    os.makedirs(a.out, exist_ok=True)
    if a.bench:
        train, forward = bench_nets(a)
        for name, text in (('bench_train.prototxt', train), ('bench_forward.prototxt', forward)):
            with open(os.path.join(a.out, name), 'w') as f:
                f.write(text)
        return
    for name, text in (('train_val.prototxt', train_val(a)), ('deploy.prototxt', deploy(a)),
                       ('solver.prototxt', solver(a))):
        with open(os.path.join(a.out, name), 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
