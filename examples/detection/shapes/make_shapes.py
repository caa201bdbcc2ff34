#!/usr/bin/env python3
"""Writes a synthetic detection dataset ("shapes") in the PASCAL VOC layout
that Caffe SSD's convert_annoset reads:

  OUT_DIR/JPEGImages/NNNNNN.png   3-channel BGR images (PNG: lossless, so the
                                  boxes stay exact after conversion)
  OUT_DIR/Annotations/NNNNNN.xml  VOC annotations, one <object> per shape
  OUT_DIR/trainval.txt, test.txt  "JPEGImages/NNNNNN.png Annotations/NNNNNN.xml"
  OUT_DIR/test_name_size.txt      "NNNNNN height width" (Caffe SSD's name_size_file)
  OUT_DIR/labelmap.prototxt       LabelMap: background 0, circle 1, square 2, triangle 3

Each image holds 1 to 3 filled shapes of a colour far from a low-contrast
background. Run (see README.md for the whole example):
  /usr/bin/python3 examples/detection/shapes/make_shapes.py OUT_DIR \\
      [--train 1000 --test 200 --size 64 --seed 0]
"""
import argparse
import os
import xml.etree.ElementTree as ET

import cv2
import numpy as np

CLASSES = ('circle', 'square', 'triangle')  # labels 1, 2, 3; 0 is the background
MAX_IOU = 0.3       # a shape's box may overlap an earlier one's this much (IoU)
PLACE_TRIES = 50    # placements tried per shape before giving up on it


def background(rng, size):
    """A smooth base colour with a gradient and blotches: enough texture that
    the net cannot find shapes by 'anything not flat', little enough that any
    shape colour chosen by shape_color() stands out."""
    base = rng.uniform(40, 215, 3)
    yy, xx = np.mgrid[0:size, 0:size] / size - 0.5
    angle = rng.uniform(0, 2 * np.pi)
    gradient = (np.cos(angle) * xx + np.sin(angle) * yy)[..., None] * rng.uniform(-30, 30, 3)
    blotches = cv2.resize(rng.uniform(-12, 12, (4, 4, 3)), (size, size),
                          interpolation=cv2.INTER_CUBIC)
    return base, base + gradient + blotches


def shape_color(rng, base):
    # The background stays within about 35 of its base on each channel, so a
    # colour 150 away (Euclidean, BGR) is at least about 90 away from every
    # background pixel.
    while True:
        color = rng.uniform(0, 255, 3)
        if np.linalg.norm(color - base) >= 150:
            return color


def shape_mask(kind, x0, y0, d, size, rng):
    """The shape's pixels, inside the d x d square at (x0, y0). Hard-edged (no
    anti-aliasing) so that its bounding box is exactly that of the mask."""
    # Pixel (x, y) is drawn when its centre (x + 0.5, y + 0.5) is inside.
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    cx, cy, r = x0 + d / 2, y0 + d / 2, d / 2
    if kind == 'circle':
        return (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
    if kind == 'square':
        return (xx >= x0) & (xx < x0 + d) & (yy >= y0) & (yy < y0 + d)
    # An equilateral triangle of side d, turned at random: no projection of it
    # is longer than d, so centring its box in the square keeps it inside,
    # and its box is 0.87 d to d wide and high, like the other shapes'.
    angles = rng.uniform(0, 2 * np.pi) + np.arange(3) * 2 * np.pi / 3
    ux, uy = d / np.sqrt(3) * np.cos(angles), d / np.sqrt(3) * np.sin(angles)
    vx = ux - (ux.max() + ux.min()) / 2 + cx
    vy = uy - (uy.max() + uy.min()) / 2 + cy
    # A pixel is inside when it is on the same side of all three edges (either
    # side, so that the vertices' winding does not matter).
    sides = [(vx[(i + 1) % 3] - vx[i]) * (yy - vy[i]) - (vy[(i + 1) % 3] - vy[i]) * (xx - vx[i])
             for i in range(3)]
    return np.all([s >= 0 for s in sides], axis=0) | np.all([s <= 0 for s in sides], axis=0)


def box_of(mask):
    """Tight box of the mask's pixels: first and last column and row, 0-based."""
    cols, rows = np.flatnonzero(mask.any(axis=0)), np.flatnonzero(mask.any(axis=1))
    return cols[0], rows[0], cols[-1], rows[-1]


def iou(a, b):
    # Boxes in pixel units, both end pixels included (as VOC's).
    w = min(a[2], b[2]) - max(a[0], b[0]) + 1
    h = min(a[3], b[3]) - max(a[1], b[1]) + 1
    if w <= 0 or h <= 0:
        return 0.0
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)
    return w * h / (area(a) + area(b) - w * h)


def make_image(rng, size):
    """Returns the BGR image and its objects [(class name, (x0, y0, x1, y1))]."""
    base, image = background(rng, size)
    # Shape sizes 14 to 36 pixels at 64 x 64, in proportion at other sizes.
    dmin, dmax = max(3, round(14 * size / 64)), max(4, round(36 * size / 64))
    objects, taken = [], np.zeros((size, size), bool)
    for _ in range(rng.integers(1, 4)):
        kind = CLASSES[rng.integers(len(CLASSES))]
        for _ in range(PLACE_TRIES):
            d = int(rng.integers(dmin, dmax + 1))
            x0, y0 = (int(v) for v in rng.integers(0, size - d + 1, 2))  # fully inside
            mask = shape_mask(kind, x0, y0, d, size, rng)
            if not mask.any():  # a triangle too small to cover a pixel centre
                continue
            box = box_of(mask)
            # Boxes may overlap a little, but the shapes' pixels neither
            # overlap nor touch (a 1-pixel gap): no shape hides part of
            # another, so each box is that of what is visible, as VOC's are.
            if (all(iou(box, b) <= MAX_IOU for _, b in objects)
                    and not (cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8)) & taken).any()):
                break
        else:
            continue  # no room left for this shape: the image has fewer
        image[mask] = shape_color(rng, base)
        taken |= mask
        objects.append((kind, box))
    # Sensor-like noise over everything, shapes included, so that flat colour
    # is not a shortcut either.
    image += rng.normal(0, 4, image.shape)
    return np.clip(np.rint(image), 0, 255).astype(np.uint8), objects


def write_xml(path, name, size, objects):
    root = ET.Element('annotation')
    ET.SubElement(root, 'folder').text = 'shapes'
    ET.SubElement(root, 'filename').text = name + '.png'
    sz = ET.SubElement(root, 'size')
    for tag, value in (('width', size), ('height', size), ('depth', 3)):
        ET.SubElement(sz, tag).text = str(value)
    for kind, (x0, y0, x1, y1) in objects:
        obj = ET.SubElement(root, 'object')
        for tag, value in (('name', kind), ('pose', 'Unspecified'),
                           ('truncated', 0), ('difficult', 0)):
            ET.SubElement(obj, tag).text = str(value)
        bndbox = ET.SubElement(obj, 'bndbox')
        # VOC's coordinates are 1-based: the leftmost column is xmin - 1 and
        # the rightmost xmax - 1 (Caffe SSD's reader divides them by the size
        # as they are).
        for tag, value in zip(('xmin', 'ymin', 'xmax', 'ymax'), (x0, y0, x1, y1)):
            ET.SubElement(bndbox, tag).text = str(int(value) + 1)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding='utf-8')


def write_labelmap(path):
    items = [('none_of_the_above', 0, 'background')] + [
        (name, label, name) for label, name in enumerate(CLASSES, start=1)]
    with open(path, 'w') as f:
        for name, label, display in items:
            f.write('item {\n  name: "%s"\n  label: %d\n  display_name: "%s"\n}\n'
                    % (name, label, display))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('out_dir')
    parser.add_argument('--train', type=int, default=1000, help='trainval images')
    parser.add_argument('--test', type=int, default=200, help='test images')
    parser.add_argument('--size', type=int, default=64, help='image width and height')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args()
    if args.size < 16:
        parser.error('--size must be at least 16')

    for sub in ('JPEGImages', 'Annotations'):
        os.makedirs(os.path.join(args.out_dir, sub), exist_ok=True)
    write_labelmap(os.path.join(args.out_dir, 'labelmap.prototxt'))
    number = 0  # images are numbered 000001, ... across both lists, as VOC's
    for split, count, list_name in ((0, args.train, 'trainval.txt'), (1, args.test, 'test.txt')):
        lines, name_sizes = [], []
        for i in range(count):
            number += 1
            name = '%06d' % number
            # One generator per image, seeded by (seed, list, index in list):
            # an image depends on nothing else, so --train changes the test
            # images' names but not their content.
            rng = np.random.default_rng([args.seed, split, i])
            image, objects = make_image(rng, args.size)
            cv2.imwrite(os.path.join(args.out_dir, 'JPEGImages', name + '.png'), image)
            write_xml(os.path.join(args.out_dir, 'Annotations', name + '.xml'),
                      name, args.size, objects)
            lines.append('JPEGImages/%s.png Annotations/%s.xml\n' % (name, name))
            name_sizes.append('%s %d %d\n' % (name, args.size, args.size))
        with open(os.path.join(args.out_dir, list_name), 'w') as f:
            f.writelines(lines)
        if list_name == 'test.txt':
            with open(os.path.join(args.out_dir, 'test_name_size.txt'), 'w') as f:
                f.writelines(name_sizes)
    print('%d trainval and %d test images in %s' % (args.train, args.test, args.out_dir))


if __name__ == '__main__':
    main()
