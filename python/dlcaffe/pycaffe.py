"""pycaffe's Python-side API on the compiled core: Net's blobs, params and
forward/backward with keyword inputs, batched forward_all, the solver
classes, and the base class of Python layers.

When arrays sync with the device (Blob.data / Blob.diff): a write through
an array is seen by the next device work (forward, backward, a solver step,
reshape, ...); values computed on the device are seen by the next read of
.data/.diff, and arrays the caller still holds are refreshed right after the
device work. Reading costs no copy unless the device changed the blob since.
"""
from collections import OrderedDict
import time

import numpy as np

from . import _dlcaffe
from ._dlcaffe import Net, Solver


# ---- Net ----

def _blobs(self):
    """OrderedDict of blob name -> Blob, in the net's order."""
    return OrderedDict(zip(self._blob_names, self._blobs))


def _params(self):
    """OrderedDict of layer name -> BlobVec of its parameter blobs, for the
    layers that have any: params[name][0].data is usually the weights,
    params[name][1].data the bias."""
    return OrderedDict((name, self._layer_blobs(i))
                       for i, name in enumerate(self._layer_names)
                       if len(self._layer_blobs(i)) > 0)


def _layer_dict(self):
    """OrderedDict of layer name -> layer."""
    return OrderedDict(zip(self._layer_names, self.layers))


def _blob_loss_weights(self):
    """OrderedDict of blob name -> its weight in the loss."""
    return OrderedDict(zip(self._blob_names, self._blob_loss_weights))


def _inputs(self):
    """Names of the net's input blobs."""
    return [self._blob_names[i] for i in self._inputs]


def _outputs(self):
    """Names of the net's output blobs (tops no layer consumes)."""
    return [self._blob_names[i] for i in self._outputs]


def _top_names(self):
    """OrderedDict of layer name -> names of its top blobs."""
    return OrderedDict((name, [self._blob_names[b] for b in self._top_ids(i)])
                       for i, name in enumerate(self._layer_names))


def _bottom_names(self):
    """OrderedDict of layer name -> names of its bottom blobs."""
    return OrderedDict((name, [self._blob_names[b] for b in self._bottom_ids(i)])
                       for i, name in enumerate(self._layer_names))


def _layer_index(self, name, what):
    names = list(self._layer_names)
    if name not in names:
        raise ValueError("%s: the net has no layer '%s'" % (what, name))
    return names.index(name)


def _set_blobs(self, names, values, attribute, what):
    """Copies keyword arrays into the named blobs' data or diff."""
    if set(values) != set(names):
        raise ValueError("%s: the blob arguments (%s) must be exactly %s"
                         % (what, ", ".join(sorted(values)) or "none", ", ".join(names)))
    for name, value in values.items():
        blob = self.blobs[name]
        value = np.asarray(value)
        if value.shape[:1] != blob.shape[:1]:
            raise ValueError("%s: '%s' has %d items, the blob's batch is %d (reshape the "
                             "blob first, or use forward_all)"
                             % (what, name, value.shape[0] if value.ndim else 0, blob.shape[0]))
        getattr(blob, attribute)[...] = value


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Forward from layer `start` to layer `end` (names; the whole net by
    default), with inputs given as keyword arrays (input blob name = array,
    batch-sized). Returns a dict of blob name -> data array for the outputs
    (or the tops of `end`) and the blobs named in `blobs`."""
    blobs = list(blobs or [])
    start_index = 0 if start is None else _layer_index(self, start, "forward")
    if end is None:
        end_index = len(self.layers) - 1
        outputs = set(self.outputs + blobs)
    else:
        end_index = _layer_index(self, end, "forward")
        outputs = set(self.top_names[end] + blobs)
    if kwargs:
        _set_blobs(self, self.inputs, kwargs, "data", "forward")
    self._forward(start_index, end_index)
    return {name: self.blobs[name].data for name in outputs}


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Backward from layer `start` down to layer `end` (names; the whole net
    by default), with output diffs given as keyword arrays. Returns a dict of
    blob name -> diff array for the inputs (or the bottoms of `end`) and the
    blobs named in `diffs`."""
    diffs = list(diffs or [])
    start_index = len(self.layers) - 1 if start is None else _layer_index(self, start, "backward")
    if end is None:
        end_index = 0
        outputs = set(self.inputs + diffs)
    else:
        end_index = _layer_index(self, end, "backward")
        outputs = set(self.bottom_names[end] + diffs)
    if kwargs:
        _set_blobs(self, self.outputs, kwargs, "diff", "backward")
    self._backward(start_index, end_index)
    return {name: self.blobs[name].diff for name in outputs}


def _batches(self, arrays):
    """Splits keyword arrays into the net's batches; the last is padded by
    repeating zeros. Yields (batch dict, number of real items)."""
    sizes = {len(a) for a in arrays.values()}
    if len(sizes) != 1:
        raise ValueError("forward_all: the inputs have different numbers of items: %s"
                         % {k: len(v) for k, v in arrays.items()})
    total = sizes.pop()
    batch = self.blobs[next(iter(arrays))].shape[0]
    for begin in range(0, total, batch):
        chunk = {}
        for name, values in arrays.items():
            part = np.asarray(values[begin:begin + batch], dtype=np.float32)
            if len(part) < batch:
                pad = np.zeros((batch - len(part),) + part.shape[1:], dtype=np.float32)
                part = np.concatenate([part, pad])
            chunk[name] = part
        yield chunk, min(batch, total - begin)


def _forward_all(self, blobs=None, **kwargs):
    """forward() over any number of items, batch by batch: returns a dict of
    blob name -> array of all items' outputs (copies)."""
    collected = {name: [] for name in set(self.outputs + list(blobs or []))}
    if not kwargs:  # the net feeds itself (a data layer): one batch
        return {name: value.copy() for name, value in self.forward(blobs=blobs).items()}
    for chunk, real in _batches(self, kwargs):
        out = self.forward(blobs=blobs, **chunk)
        for name in collected:
            collected[name].append(out[name][:real].copy())
    return {name: np.concatenate(parts) for name, parts in collected.items()}


def _forward_backward_all(self, blobs=None, diffs=None, **kwargs):
    """forward() and backward() over any number of items, batch by batch:
    keyword arrays are inputs (named like input blobs) or output diffs (named
    like output blobs). Returns (outputs dict, input diffs dict)."""
    forward_in = {k: v for k, v in kwargs.items() if k in self.inputs}
    backward_in = {k: v for k, v in kwargs.items() if k in self.outputs}
    unknown = set(kwargs) - set(forward_in) - set(backward_in)
    if unknown:
        raise ValueError("forward_backward_all: %s name no input or output blob"
                         % ", ".join(sorted(unknown)))
    all_outs = {name: [] for name in set(self.outputs + list(blobs or []))}
    all_diffs = {name: [] for name in set(self.inputs + list(diffs or []))}
    forward_batches = _batches(self, forward_in) if forward_in else iter([({}, None)])
    backward_batches = _batches(self, backward_in) if backward_in else None
    for chunk, real in forward_batches:
        outs = self.forward(blobs=blobs, **chunk)
        back_chunk = next(backward_batches)[0] if backward_batches else {}
        grads = self.backward(diffs=diffs, **back_chunk)
        for name in all_outs:
            all_outs[name].append(outs[name][:real].copy())
        for name in all_diffs:
            all_diffs[name].append(grads[name][:real].copy())
    return ({k: np.concatenate(v) for k, v in all_outs.items()},
            {k: np.concatenate(v) for k, v in all_diffs.items()})


def _set_input_arrays(self, data, labels):
    """Feeds a MemoryData first layer: data (N, C, H, W) and N labels, N a
    multiple of its batch size (copied to the device now)."""
    data = np.ascontiguousarray(data, dtype=np.float32)
    labels = np.ascontiguousarray(labels, dtype=np.float32).reshape(-1)
    self._set_input_arrays(data, labels)


def _to_proto(self, write_diff=False):
    """The net as a caffe_pb2.NetParameter with its weights."""
    from .proto import caffe_pb2
    return caffe_pb2.NetParameter.FromString(self._to_proto_bytes(write_diff))


Net.blobs = property(_blobs)
Net.params = property(_params)
Net.layer_dict = property(_layer_dict)
Net.blob_loss_weights = property(_blob_loss_weights)
Net.inputs = property(_inputs)
Net.outputs = property(_outputs)
Net.top_names = property(_top_names)
Net.bottom_names = property(_bottom_names)
Net.forward = _forward
Net.backward = _backward
Net.forward_all = _forward_all
Net.forward_backward_all = _forward_backward_all
Net.set_input_arrays = _set_input_arrays
Net.to_proto = _to_proto


# ---- Solvers ----

def _solver_param(self):
    """The solver's parameters as a caffe_pb2.SolverParameter."""
    from .proto import caffe_pb2
    return caffe_pb2.SolverParameter.FromString(self._param_bytes)


Solver.param = property(_solver_param)


def _solver_class(type_name):
    def __init__(self, solver_file):
        Solver.__init__(self, solver_file, type_name)
    __init__.__doc__ = "A %s solver from a solver prototxt (its type field is ignored)." % type_name
    return type(type_name + "Solver", (Solver,), {"__init__": __init__, "__module__": __name__,
                                                  "__doc__": "Caffe's %s solver." % type_name})


SGDSolver = _solver_class("SGD")
NesterovSolver = _solver_class("Nesterov")
AdaGradSolver = _solver_class("AdaGrad")
RMSPropSolver = _solver_class("RMSProp")
AdaDeltaSolver = _solver_class("AdaDelta")
AdamSolver = _solver_class("Adam")
AdamWSolver = _solver_class("AdamW")
_SOLVER_CLASSES = {cls.__name__[:-len("Solver")]: cls for cls in
                   (SGDSolver, NesterovSolver, AdaGradSolver, RMSPropSolver, AdaDeltaSolver,
                    AdamSolver, AdamWSolver)}


def get_solver(solver_file):
    """The solver a solver prototxt describes (of the type it names, SGD by
    default), e.g. caffe.get_solver('lenet_solver.prototxt')."""
    cls = _SOLVER_CLASSES.get(_dlcaffe._solver_type(solver_file))
    return cls(solver_file) if cls is not None else Solver(solver_file)


# ---- Python layers ----

class Layer(object):
    """Base class of Python layers (type: "Python", python_param { module
    layer param_str }). Override setup(bottom, top), reshape(bottom, top),
    forward(bottom, top) and backward(top, propagate_down, bottom); bottom
    and top are lists of Blobs. Set by the net before setup: self.param_str,
    self.phase (caffe.TRAIN or caffe.TEST) and self.blobs (add learnable
    blobs with self.blobs.add_blob(*shape))."""

    def __init__(self, param=None):
        self.layer_param = param

    def setup(self, bottom, top):
        """Once, before the first reshape: read param_str, add blobs."""

    def reshape(self, bottom, top):
        """Shape the tops from the bottoms (before every forward whose input
        shapes may have changed)."""

    def forward(self, bottom, top):
        raise NotImplementedError("%s defines no forward()" % type(self).__name__)

    def backward(self, top, propagate_down, bottom):
        if any(propagate_down):
            raise NotImplementedError("%s defines no backward(), but the net needs "
                                      "gradients through it" % type(self).__name__)


# ---- pycaffe's process settings for multi-GPU training, and its Timer ----

_solver_count = 1
_solver_rank = 0
_multiprocess = False


def has_nccl():
    """False: dlcaffe trains on several devices through its own replicas
    (dlcaffe train --device=0,1 or mpirun), not through NCCL from Python."""
    return False


def solver_count():
    """How many solvers train together (pycaffe's setting; 1 unless set)."""
    return _solver_count


def set_solver_count(count):
    global _solver_count
    _solver_count = int(count)


def solver_rank():
    """This solver's rank among solver_count() (pycaffe's setting)."""
    return _solver_rank


def set_solver_rank(rank):
    global _solver_rank
    _solver_rank = int(rank)


def set_multiprocess(multiprocess):
    global _multiprocess
    _multiprocess = bool(multiprocess)


class NCCL(object):
    """pycaffe's NCCL gradient exchange, which dlcaffe does not have: see
    has_nccl() and docs/data-parallel.md for training on several devices."""

    def __init__(self, solver=None, uid=None):
        raise RuntimeError("caffe.NCCL: dlcaffe has no NCCL; train on several devices with "
                           "`dlcaffe train --device=0,1` or mpirun (docs/data-parallel.md)")

    @staticmethod
    def new_uid():
        raise RuntimeError("caffe.NCCL: dlcaffe has no NCCL (caffe.has_nccl() is False)")


class Timer(object):
    """pycaffe's Timer: start(), stop(), then ms, microseconds, seconds of
    wall-clock time (device work from Python waits for the device, so it is
    inside the interval)."""

    def __init__(self):
        self._start = None
        self._elapsed = 0.0
        self.running = False

    def start(self):
        self._start = time.perf_counter()
        self.running = True

    def stop(self):
        if self.running:
            self._elapsed = time.perf_counter() - self._start
            self.running = False

    @property
    def seconds(self):
        return self._elapsed

    @property
    def ms(self):
        return self._elapsed * 1e3

    @property
    def microseconds(self):
        return self._elapsed * 1e6
