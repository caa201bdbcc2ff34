"""pycaffe's coord_map: how the spatial coordinates of one NetSpec top map
onto another's, to crop fully convolutional nets (FCN) so that outputs line
up with inputs.

A map is (axis, a, b): coordinate x of the lower blob corresponds to
a * x + b of the upper one, for the axes from `axis` on (axis None: any).
Convolution and Pooling (and Im2col) shrink by their stride and shift by
pad - (kernel - 1) / 2 (kernel dilated); Deconvolution does the inverse;
Crop shifts by its offset; the elementwise layers of PASS_THROUGH_LAYERS
keep coordinates. `crop(top_from, top_to)` makes the Crop layer that cuts
top_from to top_to's coordinates.
"""
import numpy as np

from .net_spec import layers as L

__all__ = ["PASS_THROUGH_LAYERS", "UndefinedMapException", "AxisMismatchException",
           "conv_params", "crop_params", "coord_map", "compose", "inverse",
           "coord_map_from_to", "crop"]

PASS_THROUGH_LAYERS = ["AbsVal", "BatchNorm", "Bias", "BNLL", "Dropout", "Eltwise", "ELU",
                       "Log", "LRN", "Exp", "MVN", "Power", "ReLU", "PReLU", "Scale",
                       "Sigmoid", "Split", "TanH", "Threshold"]

_LEGACY_SPATIAL = ("pad_h", "pad_w", "kernel_h", "kernel_w", "stride_h", "stride_w")


class UndefinedMapException(Exception):
    """The layer has no coordinate map (e.g. InnerProduct)."""


class AxisMismatchException(Exception):
    """Two maps start at different axes, so they cannot be composed."""


def _vector(value):
    return np.array(value, ndmin=1)


def conv_params(fn):
    """(axis, stride, dilated kernel extent, pad) of a Convolution, Pooling,
    Deconvolution or Im2col Function, as numpy vectors (one entry, or one
    per spatial axis), from its convolution_param dict or its keywords.
    The legacy _h/_w settings are refused (AssertionError)."""
    params = fn.params.get("convolution_param", fn.params)
    legacy = set(_LEGACY_SPATIAL) & (set(params) | set(fn.params))
    assert not legacy, "cropping does not support legacy _h/_w params (%s)" % (
        ", ".join(sorted(legacy)))
    axis = params.get("axis", 1)
    kernel = _vector(params["kernel_size"])
    dilation = _vector(params.get("dilation", 1))
    extent = (kernel - 1) * dilation + 1
    return axis, _vector(params.get("stride", 1)), extent, _vector(params.get("pad", 0))


def crop_params(fn):
    """(axis, offset) of a Crop Function: axis 2 (the first spatial axis of
    N x C x H x W) and offset 0 unless set, offset as a numpy vector."""
    params = fn.params.get("crop_param", fn.params)
    return params.get("axis", 2), _vector(params.get("offset", 0))


def coord_map(fn):
    """The (axis, a, b) map from a layer's top coordinates to its bottom's,
    for the layer of Function `fn`. Raises UndefinedMapException for a
    layer type without one."""
    kind = fn.type_name
    if kind in ("Convolution", "Pooling", "Im2col"):
        axis, stride, extent, pad = conv_params(fn)
        return axis, 1 / stride, (pad - (extent - 1) / 2) / stride
    if kind == "Deconvolution":
        axis, stride, extent, pad = conv_params(fn)
        return axis, stride, (extent - 1) / 2 - pad
    if kind in PASS_THROUGH_LAYERS:
        return None, 1, 0
    if kind == "Crop":
        axis, offset = crop_params(fn)
        # The map's axis counts from the last non-coordinate axis.
        return axis - 1, 1, -offset
    raise UndefinedMapException("no coordinate map for a %s layer" % kind)


def compose(base_map, next_map):
    """The map of `next_map` followed by `base_map` (x -> a1 (a2 x + b2) + b1).
    Raises AxisMismatchException when their axes differ."""
    axis1, a1, b1 = base_map
    axis2, a2, b2 = next_map
    if axis1 is None:
        axis = axis2
    elif axis2 is None or axis1 == axis2:
        axis = axis1
    else:
        raise AxisMismatchException("cannot compose maps on axis %s and axis %s"
                                    % (axis1, axis2))
    return axis, a1 * a2, a1 * b2 + b1


def inverse(coord_map):  # pylint: disable=redefined-outer-name
    """The inverse map: x -> (x - b) / a."""
    axis, a, b = coord_map
    return axis, 1 / a, -b / a


def _mapped_bottoms(top):
    """The bottoms whose coordinates the layer of `top` maps: all of them,
    except for Crop, whose second bottom only gives the size."""
    bottoms = top.fn.inputs
    return bottoms[:1] if top.fn.type_name == "Crop" else bottoms


def _ancestor_maps(start):
    """Walks the graph down from Top `start`: {top: map of start onto it} for
    every top reachable through layers with a coordinate map, and the order
    they were found in."""
    maps = {start: (None, 1, 0)}
    order = [start]
    index = 0
    while index < len(order):
        top = order[index]
        index += 1
        try:
            step = coord_map(top.fn)
        except UndefinedMapException:
            continue
        for bottom in _mapped_bottoms(top):
            maps[bottom] = compose(maps[top], step)
            if bottom not in order:
                order.append(bottom)
    return maps, order


def coord_map_from_to(top_from, top_to):
    """The (axis, a, b) map from top_from's coordinates to top_to's, through
    a top both descend from. Raises RuntimeError when there is none (the
    tops are not connected by layers with coordinate maps)."""
    from_maps, _ = _ancestor_maps(top_from)
    to_maps, order = _ancestor_maps(top_to)
    for top in order:  # nearest common blob first
        if top in from_maps:
            return compose(to_maps[top], inverse(from_maps[top]))
    raise RuntimeError("Could not compute map between tops; are they connected by "
                       "spatial layers?")


def crop(top_from, top_to):
    """A Crop layer (Top) that cuts top_from to the coordinates of top_to
    (crop_param axis and offsets from coord_map_from_to). AssertionError
    when the map scales, or needs a negative or fractional offset."""
    axis, a, b = coord_map_from_to(top_from, top_to)
    assert (np.asarray(a) == 1).all(), "scale mismatch on crop (a = {})".format(a)
    assert (np.asarray(b) <= 0).all(), "cannot crop negative offset (b = {})".format(b)
    assert (np.round(b) == b).all(), "cannot crop noninteger offset (b = {})".format(b)
    offset = [int(o) for o in -np.round(np.asarray(b, dtype=float)).astype(int).ravel()]
    # The map names the axis before the spatial ones: the crop starts after
    # it. No axis (only pass-through layers between): Caffe's default, 2.
    crop_axis = 2 if axis is None else axis + 1
    return L.Crop(top_from, top_to, crop_param=dict(axis=crop_axis, offset=offset))
