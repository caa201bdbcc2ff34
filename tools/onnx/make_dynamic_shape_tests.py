#!/usr/bin/python3
"""Write transformer models with dynamic batch and sequence dimensions, with
float64 references at several input shapes, for dlcaffe's reshape tests.

Usage:

    # Debian's interpreter (torch 1.13): TorchScript exporter, dynamic_axes
    /usr/bin/python3 tools/onnx/make_dynamic_shape_tests.py OUT_DIR [--opset 17]
    # PyTorch >= 2.5 (e.g. 2.11 on the GPU host): either exporter; dynamo
    # exports with torch.export dynamic shapes (Dim.DYNAMIC)
    python3 tools/onnx/make_dynamic_shape_tests.py OUT_DIR --exporter dynamo --opset 18

The models and weights are make_transformer_tests.py's (same builders, seeds
and random weights). Each is exported once, with its batch (and, for the
sequence models, sequence) dimension dynamic, to
OUT_DIR/<model>-<exporter>-opset<N>-dynamic/model.onnx; the script checks
that those graph input dimensions are symbolic in the file.

test_data_set_K holds input_0.pb and output_0.pb (the float64 eval forward)
at the K-th shape of SHAPES below, each with its tolerances.json (the
make_transformer_tests.py rule: 4x the worst float32 path's relative L2
error, at least 1e-3). The last set is a training set: also grad_output_0.pb
and grad_<initializer>.pb for every parameter (tolerance at least 1e-2).
A runtime that follows its input's shape runs the sets in order on one
loaded model: every set changes the shape.
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_transformer_tests as mt  # noqa: E402
from make_torchvision_tests import rel_l2, to_np, write_tensor  # noqa: E402

# Input shapes per data set (batch, sequence), none equal to the next; the
# sequence stays within the models' position tables (MAX_POS = 16).
SEQ_SHAPES = [(2, 13), (3, 7), (1, 16), (2, 5)]
VIT_BATCHES = [2, 3, 1, 4]
MODELS = ["gpt_lm", "llama_block", "encoder_postnorm", "vit_mini"]


def input_shapes(name):
    (_, in_spec), _, _, _ = mt.MODELS[name]
    full = tuple(in_spec[1])
    if name.startswith("vit"):
        return [(b,) + full[1:] for b in VIT_BATCHES], (0,)
    return [s + full[2:] for s in SEQ_SHAPES], (0, 1)


def make_input(name, shape, rng):
    (_, in_spec), _, _, _ = mt.MODELS[name]
    if in_spec[0] == "float":
        return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return torch.from_numpy(rng.randint(0, in_spec[2], size=shape).astype(np.int64))


def export(model, x, path, exporter, opset, in_name, out_name, dyn_axes):
    sig = mt.export_kwargs_supported()
    kwargs = dict(input_names=[in_name], output_names=[out_name], opset_version=opset,
                  export_params=True, keep_initializers_as_inputs=False)
    names = {0: "batch", 1: "seq"}
    if exporter == "torchscript":
        kwargs.update(training=torch.onnx.TrainingMode.EVAL, do_constant_folding=False,
                      dynamic_axes={in_name: {a: names[a] for a in dyn_axes},
                                    out_name: {a: names[a] for a in dyn_axes}})
        if "dynamo" in sig:
            kwargs["dynamo"] = False
        torch.onnx.export(model, (x,), path, **{k: v for k, v in kwargs.items() if k in sig})
        return
    from torch.export import Dim
    kwargs.update(dynamo=True, external_data=False, optimize=False,
                  dynamic_shapes=({a: Dim.DYNAMIC for a in dyn_axes},))
    program = torch.onnx.export(model, (x,), None, **{k: v for k, v in kwargs.items() if k in sig})
    proto = program.model_proto
    mt.strip_metadata(proto)
    import onnx
    onnx.save(proto, path)


def check_dynamic(name, path, in_name, dyn_axes):
    import onnx
    graph = onnx.load(path).graph
    inp = [i for i in graph.input if i.name == in_name][0]
    dims = inp.type.tensor_type.shape.dim
    for a in dyn_axes:
        if dims[a].HasField("dim_value"):
            mt.fail(name, f"input dimension {a} is fixed to {dims[a].dim_value} in the file, not dynamic")
    return [d.dim_param or d.dim_value for d in dims]


def bakes_sequence_length(name, exporter):
    """PyTorch 2.x's TorchScript exporter writes nn.MultiheadAttention's
    sequence length into a Reshape as a constant although the axis is
    declared dynamic (PyTorch 1.13's keeps it dynamic): such a file runs at
    the exported length only."""
    return name.startswith("encoder") and exporter == "torchscript" and int(torch.__version__.split(".")[0]) >= 2


def generate(name, out_root, exporter, opset):
    (builder, _), in_name, out_name, _ = mt.MODELS[name]
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    model = builder().eval()
    mt.randomize(name, model, torch.Generator().manual_seed(seed))
    for p in model.parameters():
        p.requires_grad_(True)
    shapes, dyn_axes = input_shapes(name)
    rng = np.random.RandomState(seed % (2 ** 31))
    xs = [make_input(name, s, rng) for s in shapes]

    test_dir = os.path.join(out_root, f"{name}-{exporter}-opset{opset}-dynamic")
    os.makedirs(test_dir, exist_ok=True)
    path = os.path.join(test_dir, "model.onnx")
    export(model, xs[0], path, exporter, opset, in_name, out_name, dyn_axes)
    y0 = mt.run_model(model, xs[0])[0]
    kind = "float" if xs[0].is_floating_point() else "tokens"
    facts = mt.verify(name, model, path, exporter, opset, in_name, out_name, kind, tuple(y0.shape))
    dims = check_dynamic(name, path, in_name, dyn_axes)

    m64 = mt.copy.deepcopy(model).double()
    worst = 0.0
    for k, x in enumerate(xs):
        set_dir = os.path.join(test_dir, f"test_data_set_{k}")
        os.makedirs(set_dir, exist_ok=True)
        x64 = x.double() if x.is_floating_point() else x
        training = k == len(xs) - 1
        mt.write_input(os.path.join(set_dir, "input_0.pb"), x, in_name)
        if not training:
            y64 = mt.run_model(m64, x64)[0]
            runs = mt.float32_paths(model, x, lambda m, xx: mt.run_model(m, xx)[0])
            tol = {"output_0.pb": max(1e-3, 4 * max(rel_l2(y, y64) for y in runs))}
        else:
            dy = torch.from_numpy(np.random.RandomState((seed + k) % (2 ** 31))
                                  .standard_normal(tuple(mt.run_model(model, x)[0].shape)).astype(np.float32))
            y64, _, g64 = mt.run_model(m64, x64, dy.double())
            runs = mt.float32_paths(model, x, lambda m, xx: mt.run_model(m, xx, dy))
            tol = {"output_0.pb": max(1e-3, 4 * max(rel_l2(r[0], y64) for r in runs))}
            write_tensor(os.path.join(set_dir, "grad_output_0.pb"), to_np(dy), out_name)
            for pname, _ in model.named_parameters():
                init = facts["init_of_param"].get(pname)
                if init is None:
                    mt.fail(name, f"parameter {pname} is no initializer of the file")
                fname = f"grad_{init}.pb"
                write_tensor(os.path.join(set_dir, fname), to_np(g64[pname]), init)
                tol[fname] = max(1e-2, 4 * max(rel_l2(r[2][pname], g64[pname]) for r in runs))
        write_tensor(os.path.join(set_dir, "output_0.pb"), to_np(y64), out_name)
        with open(os.path.join(set_dir, "tolerances.json"), "w") as f:
            json.dump(tol, f, indent=1, sort_keys=True)
        worst = max(worst, max(tol.values()))
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(test_dir) for f in fs)
    print(f"{os.path.basename(test_dir)}: input {in_name} {dims}, shapes {shapes},"
          f" nodes {facts['nodes']}, dir {size / 1e3:.0f} kB, worst tolerance {worst:.3g}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript")
    ap.add_argument("--opset", type=int, help="ONNX opset (default 17 torchscript, 18 dynamo)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of: " + ",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    opset = args.opset or mt.DEFAULT_OPSET[args.exporter]
    torch.set_num_threads(args.threads)
    if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
        torch.backends.mha.set_fastpath_enabled(False)
    print(f"torch {torch.__version__}, exporter {args.exporter}, opset {opset}", flush=True)
    failed = []
    for name in args.models.split(","):
        if name not in MODELS:
            ap.error(f"unknown model {name}; known: {','.join(MODELS)}")
        if bakes_sequence_length(name, args.exporter):
            print(f"{name}: skipped: torch {torch.__version__}'s TorchScript exporter writes"
                  f" nn.MultiheadAttention's sequence length as a constant", flush=True)
            continue
        try:
            generate(name, args.out_dir, args.exporter, opset)
        except Exception as e:  # report and go on with the others
            failed.append(name)
            print(f"{name}: FAILED: {type(e).__name__}: {str(e).strip()[:2000]}", flush=True)
    if failed:
        print(f"FAILED: {','.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
