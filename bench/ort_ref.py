"""ONNX Runtime's CPU reference timings for bench/bench_nets.sh (ORT_REF), a
second CPU reference beside bench/torch_ref.py --device cpu: torchvision nets
exported by tools/onnx/export_for_bench.py (random weights, eval mode, batch B,
3 x 224 x 224), run by the CPUExecutionProvider with ONNX Runtime's default
graph optimizations (ORT_ENABLE_ALL: it folds BatchNormalization into the
convolutions, as dlcaffe does for inference). Forward only, timed as
torch_ref.py times its forward: 3 untimed runs, then the MEAN over --iters of
one InferenceSession.run each (input copied in + forward + output handed back
as a new numpy array), in milliseconds.

--threads N sets intra_op_num_threads = N (0: ONNX Runtime's default, one per
physical core) and always inter_op_num_threads = 1 with sequential execution.
--onnx-dir DIR holds <net>.onnx at this batch; a net missing there is exported
into it first with tools/onnx/export_for_bench.py (run by /usr/bin/python3,
which has Debian's torch); a model of another batch is an error for that net.
Without --onnx-dir the models go to a temporary directory, removed at the end.
A net that fails is reported on stderr and the others still run; the exit
status is 1 only if every net failed.

Needs onnxruntime, which Debian does not package: bench/ort_env.sh installs it
from PyPI into a virtual environment and prints its interpreter:

  $(bash bench/ort_env.sh) bench/ort_ref.py [--batch 16] [--nets a,b] [--iters 20] [--threads N] [--onnx-dir DIR]

Prints one line per net, then a JSON summary in torch_ref.py's format (what
bench_nets.sh reads): {"device": "cpu", ..., "results": {net: {"fwd_ms": ms}}}."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

here = os.path.dirname(os.path.abspath(__file__))
export_script = os.path.normpath(os.path.join(here, "..", "tools", "onnx", "export_for_bench.py"))

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--nets", default="alexnet,resnet18,resnet50,vgg16,mobilenet_v2")
p.add_argument("--iters", type=int, default=20)
p.add_argument("--warmup", type=int, default=3, help="untimed runs first (torch_ref.py: 3)")
p.add_argument("--threads", type=int, default=0, help="intra_op_num_threads (0: ONNX Runtime's default)")
p.add_argument("--onnx-dir", default=None, help="where <net>.onnx are (missing ones are exported there)")
a = p.parse_args()

tmp = None
onnx_dir = a.onnx_dir
if onnx_dir is None:
    tmp = tempfile.TemporaryDirectory(prefix="ort_ref.")
    onnx_dir = tmp.name
os.makedirs(onnx_dir, exist_ok=True)


def model_path(name):
    path = os.path.join(onnx_dir, name + ".onnx")
    if not os.path.exists(path):
        # One net per call: a net that does not export stops only itself.
        print(f"{name}: exporting {path} at batch {a.batch}", file=sys.stderr, flush=True)
        done = subprocess.run(["/usr/bin/python3", export_script, onnx_dir, "--batch", str(a.batch),
                               "--nets", name], stdout=sys.stderr)
        if done.returncode != 0 or not os.path.exists(path):
            raise RuntimeError(f"tools/onnx/export_for_bench.py did not export it (exit {done.returncode})")
    return path


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


res = {}
failed = []
for name in a.nets.split(","):
    try:
        path = model_path(name)
        sess = session(path)
        inp = sess.get_inputs()[0]
        if inp.shape[0] != a.batch:
            raise ValueError(f"{path} takes batch {inp.shape[0]}, not {a.batch}: "
                             f"export it again at --batch {a.batch}")
        x = np.random.default_rng(0).standard_normal((a.batch, 3, 224, 224), dtype=np.float32)
        feed = {inp.name: x}
        for _ in range(a.warmup):
            sess.run(None, feed)
        t = time.perf_counter()
        for _ in range(a.iters):
            sess.run(None, feed)
        fwd = (time.perf_counter() - t) / a.iters * 1000
        del sess
    except Exception as e:  # report it, go on with the next net
        print(f"{name}: failed: {e}", file=sys.stderr, flush=True)
        failed.append(name)
        continue
    res[name] = {"fwd_ms": round(fwd, 3)}
    print(name, res[name], flush=True)
print(json.dumps({"device": "cpu", "provider": "CPUExecutionProvider", "onnxruntime": ort.__version__,
                  "batch": a.batch, "threads": a.threads, "results": res, "failed": failed}))
if tmp is not None:
    tmp.cleanup()
sys.exit(1 if failed and not res else 0)
