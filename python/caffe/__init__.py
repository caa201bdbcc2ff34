"""pycaffe's name for dlcaffe: `import caffe` gives the dlcaffe module itself
(and `caffe.io`, `caffe.proto.caffe_pb2`, ... its submodules), so that
scripts written for BVLC Caffe run unchanged."""
import sys

import dlcaffe

for _name, _module in list(sys.modules.items()):
    if _name.startswith("dlcaffe."):
        sys.modules["caffe" + _name[len("dlcaffe"):]] = _module
sys.modules[__name__] = dlcaffe
