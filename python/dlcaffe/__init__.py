"""dlcaffe: Caffe-style deep learning on OpenCL, from Python.

pycaffe's API (`import caffe` is this module):

    import caffe
    net = caffe.Net('deploy.prototxt', caffe.TEST, weights='model.caffemodel')
    net.blobs['data'].data[...] = images          # numpy, written in place
    probs = net.forward()['prob']
    solver = caffe.get_solver('solver.prototxt'); solver.step(100)

See docs/python.md for the whole API and when arrays sync with the device.
"""
from ._dlcaffe import (Blob, BlobVec, Error, Net, Solver, TEST, TRAIN, TextGenerator, Tokenizer,
                       __version__,
                       current_device, devices, init_log, layer_type_list, log, set_device,
                       set_mode_cpu, set_mode_gpu, set_random_seed, solver_type_list)
from .pycaffe import (NCCL, AdaDeltaSolver, AdaGradSolver, AdamSolver, AdamWSolver, Layer,
                      NesterovSolver, RMSPropSolver, SGDSolver, Timer, get_solver, has_nccl,
                      set_multiprocess, set_solver_count, set_solver_rank, solver_count,
                      solver_rank)
from . import proto
from .proto import caffe_pb2
from . import io
from .net_spec import NetSpec, layers, params, to_proto
from . import net_spec, coord_map, draw
from .classifier import Classifier
from .detector import Detector
