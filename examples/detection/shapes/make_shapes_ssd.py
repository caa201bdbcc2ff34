#!/usr/bin/env python3
"""Writes a small SSD for the shapes dataset (make_shapes.py) in Caffe SSD's
conventions (weiliu89/caffe's ssd_pascal.py), into OUT_DIR:

  train.prototxt   AnnotatedData (random crops, zoom-out, mirror) -> base net
                   -> heads -> MultiBoxLoss
  test.prototxt    AnnotatedData -> the same net -> DetectionOutput ->
                   DetectionEvaluate (the solver prints the mAP)
  deploy.prototxt  a 1 x 3 x S x S Input -> the same net -> DetectionOutput
  solver.prototxt  Adam; tests once, at the end

The files name OUT_DIR's LMDBs and label map by the path given here, so run
dlcaffe from the same directory. Run (see README.md for the whole example):
  /usr/bin/python3 examples/detection/shapes/make_shapes_ssd.py OUT_DIR \\
      [--size 64 --batch 16 --max_iter 3000 --base_lr 0.001]
"""
import argparse
import math
import os

NUM_CLASSES = 4   # background, circle, square, triangle (labelmap.prototxt)
MEAN = 'mean_value: 104 mean_value: 117 mean_value: 123'


class Net:
    """Collects layers as prototxt text and checks the wiring as it goes:
    every bottom must be a top of an earlier layer of a phase it runs in."""

    def __init__(self, name):
        self.lines = ['name: "%s"' % name]
        self.names, self.tops = set(), set()

    def layer(self, name, type_, bottoms, tops, params=''):
        assert name not in self.names, 'layer name %s twice' % name
        missing = [b for b in bottoms if b not in self.tops]
        assert not missing, '%s: no earlier layer makes %s' % (name, missing)
        self.names.add(name)
        self.tops.update(tops)
        self.lines.append('layer {\n  name: "%s"\n  type: "%s"\n%s%s%s}' % (
            name, type_, ''.join('  bottom: "%s"\n' % b for b in bottoms),
            ''.join('  top: "%s"\n' % t for t in tops),
            ''.join('  %s\n' % p for p in params.strip().split('\n')) if params else ''))
        return tops[0] if tops else None

    def conv(self, name, bottom, out, stride=1, relu=True):
        # lr and decay multipliers as Caffe's models: biases learn twice as
        # fast and are not decayed.
        self.layer(name, 'Convolution', [bottom], [name], '''
param { lr_mult: 1 decay_mult: 1 }
param { lr_mult: 2 decay_mult: 0 }
convolution_param {
  num_output: %d kernel_size: 3 pad: 1 stride: %d
  weight_filler { type: "xavier" } bias_filler { type: "constant" value: 0 }
}''' % (out, stride))
        if relu:
            self.layer(name + '_relu', 'ReLU', [name], [name])  # in place
        return name

    def write(self, path):
        with open(path, 'w') as f:
            f.write('# Written by examples/detection/shapes/make_shapes_ssd.py.\n'
                    + '\n'.join(self.lines) + '\n')


def base_and_heads(net, size):
    """Four stride-2 stages down to the three sources (S/4, S/8, S/16 cells;
    16, 8 and 4 at 64 x 64), a 3x3 loc and conf conv and a PriorBox on each,
    concatenated into mbox_loc, mbox_conf and mbox_priorbox."""
    x = net.conv('conv1_1', 'data', 16)
    x = net.conv('conv1_2', x, 32, stride=2)
    x = net.conv('conv2_1', x, 32)
    x = net.conv('conv3_1', x, 64, stride=2)
    source1 = net.conv('conv3_2', x, 64)
    source2 = net.conv('conv4_1', source1, 64, stride=2)
    source3 = net.conv('conv5_1', source2, 64, stride=2)
    # Prior sizes for shapes of 14 to 36 pixels at 64 x 64 (and for the
    # crops' zoom in and the expansion's zoom out around them), in proportion
    # at other sizes; each cell's priors: min_size, sqrt(min_size *
    # max_size), and min_size at aspect ratios 2 and 1/2.
    k = size / 64
    sources = [(source1, 12, 24, 4), (source2, 24, 40, 8), (source3, 40, 60, 16)]
    num_priors = 4
    locs, confs, priors = [], [], []
    for source, min_size, max_size, step in sources:
        for kind, per_prior, outs in (('loc', 4, locs), ('conf', NUM_CLASSES, confs)):
            head = net.conv('%s_mbox_%s' % (source, kind), source, num_priors * per_prior,
                            relu=False)
            # N x C x H x W -> N x H x W x C -> N x (H W C): each prior's
            # numbers together, cells in the order PriorBox lists them.
            net.layer(head + '_perm', 'Permute', [head], [head + '_perm'],
                      'permute_param { order: 0 order: 2 order: 3 order: 1 }')
            outs.append(net.layer(head + '_flat', 'Flatten', [head + '_perm'], [head + '_flat'],
                                  'flatten_param { axis: 1 }'))
        priors.append(net.layer(source + '_mbox_priorbox', 'PriorBox', [source, 'data'],
                                [source + '_mbox_priorbox'], '''
prior_box_param {
  min_size: %g max_size: %g aspect_ratio: 2 flip: true clip: false
  variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 step: %d offset: 0.5
}''' % (min_size * k, max_size * k, step)))
    net.layer('mbox_loc', 'Concat', locs, ['mbox_loc'], 'concat_param { axis: 1 }')
    net.layer('mbox_conf', 'Concat', confs, ['mbox_conf'], 'concat_param { axis: 1 }')
    # Priors are 1 x 2 x (priors * 4): the boxes, then their variances.
    net.layer('mbox_priorbox', 'Concat', priors, ['mbox_priorbox'], 'concat_param { axis: 2 }')


def detection_output(net):
    # Softmax over each prior's classes: N x (priors * classes) -> N x priors x
    # classes and back.
    net.layer('mbox_conf_reshape', 'Reshape', ['mbox_conf'], ['mbox_conf_reshape'],
              'reshape_param { shape { dim: 0 dim: -1 dim: %d } }' % NUM_CLASSES)
    net.layer('mbox_conf_softmax', 'Softmax', ['mbox_conf_reshape'], ['mbox_conf_softmax'],
              'softmax_param { axis: 2 }')
    net.layer('mbox_conf_flatten', 'Flatten', ['mbox_conf_softmax'], ['mbox_conf_flatten'],
              'flatten_param { axis: 1 }')
    net.layer('detection_out', 'DetectionOutput',
              ['mbox_loc', 'mbox_conf_flatten', 'mbox_priorbox'], ['detection_out'], '''
detection_output_param {
  num_classes: %d share_location: true background_label_id: 0
  nms_param { nms_threshold: 0.45 top_k: 100 }
  code_type: CENTER_SIZE keep_top_k: 50 confidence_threshold: 0.01
}''' % NUM_CLASSES)


def resize(size):
    # The images are already S x S; the resize brings the crops and the
    # expanded canvases back to the net's size.
    return ('resize_param { prob: 1 resize_mode: WARP height: %d width: %d interp_mode: LINEAR }'
            % (size, size))


def train_net(args):
    net = Net('shapes_ssd_train')
    # Batch samplers as ssd_pascal's: the whole image, or a crop of half to
    # all of each side (aspect 1/2 to 2) that overlaps some box by at least
    # the Jaccard overlap given; one of the crops found is used per image.
    samplers = ['batch_sampler { max_sample: 1 max_trials: 1 }'] + [
        'batch_sampler {\n'
        '  sampler { min_scale: 0.5 max_scale: 1.0 min_aspect_ratio: 0.5 max_aspect_ratio: 2.0 }\n'
        '  sample_constraint { min_jaccard_overlap: %g }\n'
        '  max_sample: 1 max_trials: 50\n}' % overlap for overlap in (0.3, 0.5, 0.7)]
    # ssd_pascal's photometric distortion, off by default: the shapes' colours
    # are random already.
    distort = '''
  distort_param {
    brightness_prob: 0.5 brightness_delta: 32
    contrast_prob: 0.5 contrast_lower: 0.5 contrast_upper: 1.5
    hue_prob: 0.5 hue_delta: 18
    saturation_prob: 0.5 saturation_lower: 0.5 saturation_upper: 1.5
    random_order_prob: 0.0
  }''' if args.distort else ''
    net.layer('data', 'AnnotatedData', [], ['data', 'label'], '''
include { phase: TRAIN }
transform_param {
  mirror: true
  %s
  %s
  emit_constraint { emit_type: CENTER }%s
  expand_param { prob: 0.5 max_expand_ratio: 2.0 }
}
data_param { source: "%s" batch_size: %d backend: LMDB }
annotated_data_param {
  label_map_file: "%s"
%s
}''' % (MEAN, resize(args.size), distort, os.path.join(args.out_dir, 'trainval_lmdb'),
        args.batch, os.path.join(args.out_dir, 'labelmap.prototxt'),
        '\n'.join('  ' + line for s in samplers for line in s.split('\n'))))
    base_and_heads(net, args.size)
    # No gradient into the priors or the ground truth.
    net.layer('mbox_loss', 'MultiBoxLoss', ['mbox_loc', 'mbox_conf', 'mbox_priorbox', 'label'],
              ['mbox_loss'], '''
include { phase: TRAIN }
propagate_down: true
propagate_down: true
propagate_down: false
propagate_down: false
loss_param { normalization: VALID }
multibox_loss_param {
  loc_loss_type: SMOOTH_L1 conf_loss_type: SOFTMAX loc_weight: 1.0
  num_classes: %d share_location: true match_type: PER_PREDICTION
  overlap_threshold: 0.5 use_prior_for_matching: true background_label_id: 0
  use_difficult_gt: true neg_pos_ratio: 3.0 neg_overlap: 0.5 code_type: CENTER_SIZE
  ignore_cross_boundary_bbox: false mining_type: MAX_NEGATIVE
}''' % NUM_CLASSES)
    return net


def test_net(args):
    net = Net('shapes_ssd_test')
    net.layer('data', 'AnnotatedData', [], ['data', 'label'], '''
include { phase: TEST }
transform_param {
  %s
  %s
}
data_param { source: "%s" batch_size: %d backend: LMDB }
annotated_data_param { label_map_file: "%s" }''' % (
        MEAN, resize(args.size), os.path.join(args.out_dir, 'test_lmdb'), args.test_batch,
        os.path.join(args.out_dir, 'labelmap.prototxt')))
    base_and_heads(net, args.size)
    detection_output(net)
    # name_size_file: Caffe SSD evaluates in the images' pixels; dlcaffe reads
    # it and evaluates in normalized coordinates (the same here: no resize).
    net.layer('detection_eval', 'DetectionEvaluate', ['detection_out', 'label'],
              ['detection_eval'], '''
include { phase: TEST }
detection_evaluate_param {
  num_classes: %d background_label_id: 0 overlap_threshold: 0.5
  evaluate_difficult_gt: false name_size_file: "%s"
}''' % (NUM_CLASSES, os.path.join(args.out_dir, 'test_name_size.txt')))
    return net


def deploy_net(args):
    net = Net('shapes_ssd_deploy')
    net.layer('data', 'Input', [], ['data'],
              'input_param { shape { dim: 1 dim: 3 dim: %d dim: %d } }' % (args.size, args.size))
    base_and_heads(net, args.size)
    detection_output(net)
    return net


def solver(args, test_images):
    return '\n'.join([
        '# Written by examples/detection/shapes/make_shapes_ssd.py.',
        'train_net: "%s"' % os.path.join(args.out_dir, 'train.prototxt'),
        'test_net: "%s"' % os.path.join(args.out_dir, 'test.prototxt'),
        # Every test image once, at the end only (testing is slow next to
        # these iterations, and the mAP of the final weights is what matters).
        'test_iter: %d' % math.ceil(test_images / args.test_batch),
        'test_interval: %d' % args.max_iter,
        'test_initialization: false',
        'eval_type: "detection"',
        'ap_version: "11point"',
        'show_per_class_result: true',
        # Adam needs no tuning of the rate to the loss's scale; one drop by
        # 10 for the last fifth settles the weights.
        'type: "Adam"',
        'base_lr: %g' % args.base_lr,
        'momentum: 0.9',
        'momentum2: 0.999',
        'weight_decay: 0.0005',
        'lr_policy: "multistep"',
        'gamma: 0.1',
        'stepvalue: %d' % (args.max_iter * 4 // 5),
        'max_iter: %d' % args.max_iter,
        'display: 100',
        'average_loss: 10',  # the loss shown: averaged over 10 batches
        'snapshot_prefix: "%s"' % os.path.join(args.out_dir, 'shapes_ssd'),
        'random_seed: 1',
    ]) + '\n'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('out_dir', help="make_shapes.py's folder, with its LMDBs")
    parser.add_argument('--size', type=int, default=64, help='net input size (a multiple of 16)')
    parser.add_argument('--batch', type=int, default=16, help='train batch size')
    parser.add_argument('--test_batch', type=int, default=10)
    parser.add_argument('--max_iter', type=int, default=3000)
    parser.add_argument('--base_lr', type=float, default=0.001)
    parser.add_argument('--distort', action='store_true',
                        help="ssd_pascal's photometric distortion in training")
    args = parser.parse_args()
    if args.size % 16:
        # Four stride-2 stages: the priors' steps (4, 8, 16) are exact only then.
        parser.error('--size must be a multiple of 16')
    test_list = os.path.join(args.out_dir, 'test.txt')
    if not os.path.exists(test_list):
        parser.error('%s not found: run make_shapes.py first' % test_list)
    with open(test_list) as f:
        test_images = sum(1 for line in f if line.strip())

    for net, name in ((train_net(args), 'train'), (test_net(args), 'test'),
                      (deploy_net(args), 'deploy')):
        net.write(os.path.join(args.out_dir, name + '.prototxt'))
    with open(os.path.join(args.out_dir, 'solver.prototxt'), 'w') as f:
        f.write(solver(args, test_images))
    print('train, test, deploy and solver prototxt in %s' % args.out_dir)


if __name__ == '__main__':
    main()
