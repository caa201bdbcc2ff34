#!/usr/bin/env python3
"""Writes two SSD deploy prototxts in the shapes of the Caffe SSD models
people deploy, narrower (the weights are random: they test layers, not
accuracy):

  res10_300x300_deploy.prototxt  the res10 face detector's shape (OpenCV's
      samples): ResNet basic blocks with BatchNorm/Scale, conv4_3-style
      Normalize on the first source, 2 classes, 5 sources;
  mobilenet_ssd_deploy.prototxt  MobileNet-SSD's (chuanqi305): depthwise
      separable convolutions, 1x1 heads, 21 classes, 6 sources.

Both: 1 x 3 x 300 x 300 'data', PriorBox/Permute/Flatten/Concat heads, the
confidences through Reshape/Softmax/Flatten, DetectionOutput 'detection_out'
(1 x 1 x D x 7). Run from the project's root:
  /usr/bin/python3 models/ssd/make_ssd_models.py
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Net:
    def __init__(self, name):
        self.lines = ['name: "%s"' % name,
                      'layer { name: "data" type: "Input" top: "data"',
                      '  input_param { shape { dim: 1 dim: 3 dim: 300 dim: 300 } } }']

    def add(self, text):
        self.lines.append(text)

    def conv(self, name, bottom, out, kernel, stride=1, pad=0, group=1, bias=True):
        self.add('layer { name: "%s" type: "Convolution" bottom: "%s" top: "%s"\n'
                 '  convolution_param { num_output: %d kernel_size: %d stride: %d pad: %d%s%s } }'
                 % (name, bottom, name, out, kernel, stride, pad,
                    ' group: %d' % group if group > 1 else '',
                    '' if bias else ' bias_term: false'))
        return name

    def bn_scale(self, blob):
        self.add('layer { name: "%s/bn" type: "BatchNorm" bottom: "%s" top: "%s"\n'
                 '  batch_norm_param { use_global_stats: true eps: 1e-5 } }' % (blob, blob, blob))
        self.add('layer { name: "%s/scale" type: "Scale" bottom: "%s" top: "%s"\n'
                 '  scale_param { bias_term: true } }' % (blob, blob, blob))

    def relu(self, blob):
        self.add('layer { name: "%s/relu" type: "ReLU" bottom: "%s" top: "%s" }' % (blob, blob, blob))

    def ssd_head(self, sources, classes, detection):
        """sources: (blob, priors per cell, PriorBox parameters)."""
        locs, confs, priors = [], [], []
        for blob, count, prior_text, kernel in sources:
            for kind, per in (('loc', 4), ('conf', classes)):
                head = self.conv('%s_mbox_%s' % (blob, kind), blob, count * per, kernel,
                                 pad=kernel // 2)
                self.add('layer { name: "%s_perm" type: "Permute" bottom: "%s" top: "%s_perm"\n'
                         '  permute_param { order: 0 order: 2 order: 3 order: 1 } }'
                         % (head, head, head))
                self.add('layer { name: "%s_flat" type: "Flatten" bottom: "%s_perm" top: "%s_flat"\n'
                         '  flatten_param { axis: 1 } }' % (head, head, head))
                (locs if kind == 'loc' else confs).append(head + '_flat')
            self.add('layer { name: "%s_mbox_priorbox" type: "PriorBox" bottom: "%s" bottom: "data"\n'
                     '  top: "%s_mbox_priorbox"\n  prior_box_param { %s\n'
                     '    variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 offset: 0.5 } }'
                     % (blob, blob, blob, prior_text))
            priors.append(blob + '_mbox_priorbox')
        for name, blobs, axis in (('mbox_loc', locs, 1), ('mbox_conf', confs, 1),
                                  ('mbox_priorbox', priors, 2)):
            self.add('layer { name: "%s" type: "Concat" %s top: "%s"\n  concat_param { axis: %d } }'
                     % (name, ' '.join('bottom: "%s"' % b for b in blobs), name, axis))
        self.add('layer { name: "mbox_conf_reshape" type: "Reshape" bottom: "mbox_conf"\n'
                 '  top: "mbox_conf_reshape"\n'
                 '  reshape_param { shape { dim: 0 dim: -1 dim: %d } } }' % classes)
        self.add('layer { name: "mbox_conf_softmax" type: "Softmax" bottom: "mbox_conf_reshape"\n'
                 '  top: "mbox_conf_softmax" softmax_param { axis: 2 } }')
        self.add('layer { name: "mbox_conf_flatten" type: "Flatten" bottom: "mbox_conf_softmax"\n'
                 '  top: "mbox_conf_flatten" flatten_param { axis: 1 } }')
        self.add('layer { name: "detection_out" type: "DetectionOutput" bottom: "mbox_loc"\n'
                 '  bottom: "mbox_conf_flatten" bottom: "mbox_priorbox" top: "detection_out"\n'
                 '  include { phase: TEST }\n  detection_output_param { num_classes: %d %s } }'
                 % (classes, detection))

    def write(self, name):
        with open(os.path.join(HERE, name), 'w') as f:
            f.write('# Written by models/ssd/make_ssd_models.py.\n' + '\n'.join(self.lines) + '\n')


def res10():
    net = Net('res10_300x300_ssd')
    net.conv('conv1', 'data', 16, 7, stride=2, pad=3, bias=False)
    net.bn_scale('conv1')
    net.relu('conv1')
    net.add('layer { name: "conv1_pool" type: "Pooling" bottom: "conv1" top: "conv1_pool"\n'
            '  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }')
    bottom = 'conv1_pool'
    # ResNet basic blocks: two 3x3 convolutions and a (projected) shortcut.
    for width, stride in ((16, 1), (24, 2), (32, 2), (48, 2)):
        block = 'layer_%d_1' % width
        a = net.conv(block + '_conv1', bottom, width, 3, stride=stride, pad=1, bias=False)
        net.bn_scale(a)
        net.relu(a)
        b = net.conv(block + '_conv2', a, width, 3, pad=1, bias=False)
        net.bn_scale(b)
        shortcut = net.conv(block + '_conv_expand', bottom, width, 1, stride=stride, bias=False)
        net.add('layer { name: "%s_sum" type: "Eltwise" bottom: "%s" bottom: "%s" top: "%s_sum" }'
                % (block, b, shortcut, block))
        net.relu(block + '_sum')
        bottom = block + '_sum'
        if width == 32:  # 19 x 19: the first source, normalized as conv4_3
            net.add('layer { name: "conv4_3_norm" type: "Normalize" bottom: "%s" top: "conv4_3_norm"\n'
                    '  norm_param { across_spatial: false channel_shared: false\n'
                    '    scale_filler { type: "constant" value: 20 } } }' % bottom)
            first = 'conv4_3_norm'
    fc7 = bottom  # 10 x 10
    extra = fc7
    extras = []
    for i, (width, stride, pad) in enumerate(((32, 2, 1), (24, 2, 1), (24, 1, 0)), start=6):
        reduce = net.conv('conv%d_1' % i, extra, width // 2, 1)
        net.relu(reduce)
        extra = net.conv('conv%d_2' % i, reduce, width, 3, stride=stride, pad=pad)
        net.relu(extra)
        extras.append(extra)  # 5 x 5, 3 x 3, 1 x 1
    net.ssd_head([
        (first, 4, 'min_size: 30 max_size: 60 aspect_ratio: 2 flip: true clip: false step: 16', 3),
        (fc7, 6, 'min_size: 60 max_size: 111 aspect_ratio: 2 aspect_ratio: 3 flip: true clip: false step: 32', 3),
        (extras[0], 6, 'min_size: 111 max_size: 162 aspect_ratio: 2 aspect_ratio: 3 flip: true clip: false step: 64', 3),
        (extras[1], 4, 'min_size: 162 max_size: 213 aspect_ratio: 2 flip: true clip: false step: 100', 3),
        (extras[2], 4, 'min_size: 213 max_size: 264 aspect_ratio: 2 flip: true clip: false step: 300', 3),
    ], 2, 'share_location: true background_label_id: 0\n'
          '    nms_param { nms_threshold: 0.45 top_k: 400 } code_type: CENTER_SIZE\n'
          '    keep_top_k: 200 confidence_threshold: 0.01')
    net.write('res10_300x300_deploy.prototxt')


def mobilenet():
    net = Net('MobileNet-SSD')
    bottom = net.conv('conv0', 'data', 8, 3, stride=2, pad=1)
    net.relu(bottom)
    # (output channels, stride) of MobileNet's depthwise-separable blocks 1-13.
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]
    channels = 8
    for i, (out, stride) in enumerate(blocks, start=1):
        dw = net.conv('conv%d/dw' % i, bottom, channels, 3, stride=stride, pad=1, group=channels)
        net.relu(dw)
        bottom = net.conv('conv%d' % i, dw, out, 1)
        net.relu(bottom)
        channels = out
    extras = []
    for i, (width, pad) in enumerate(((128, 1), (64, 1), (64, 1), (32, 1)), start=14):
        reduce = net.conv('conv%d_1' % i, bottom, width // 2, 1)
        net.relu(reduce)
        bottom = net.conv('conv%d_2' % i, reduce, width, 3, stride=2, pad=pad)
        net.relu(bottom)
        extras.append(bottom)  # 5 x 5, 3 x 3, 2 x 2, 1 x 1
    ratios = 'aspect_ratio: 2 aspect_ratio: 3 flip: true clip: false'
    net.ssd_head([
        ('conv11', 3, 'min_size: 60 aspect_ratio: 2 flip: true clip: false', 1),
        ('conv13', 6, 'min_size: 105 max_size: 150 ' + ratios, 1),
        (extras[0], 6, 'min_size: 150 max_size: 195 ' + ratios, 1),
        (extras[1], 6, 'min_size: 195 max_size: 240 ' + ratios, 1),
        (extras[2], 6, 'min_size: 240 max_size: 285 ' + ratios, 1),
        (extras[3], 6, 'min_size: 285 max_size: 300 ' + ratios, 1),
    ], 21, 'share_location: true background_label_id: 0\n'
           '    nms_param { nms_threshold: 0.45 top_k: 100 } code_type: CENTER_SIZE\n'
           '    keep_top_k: 100 confidence_threshold: 0.25')
    net.write('mobilenet_ssd_deploy.prototxt')


if __name__ == '__main__':
    res10()
    mobilenet()
