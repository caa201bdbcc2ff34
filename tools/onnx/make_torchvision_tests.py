#!/usr/bin/python3
"""Write ONNX backend-style test directories for 19 torchvision networks.

Usage (Debian's interpreter: it has torch 1.13, torchvision 0.14, onnx 1.12):

    /usr/bin/python3 tools/onnx/make_torchvision_tests.py OUT_DIR \
        [--nets alexnet,resnet18,...] [--small] [--opset N] [--threads T] \
        [--dtypes float32,float16,bfloat16]

writes OUT_DIR/<net>/ for each net (default: all 19 of NETS below) and
prints one line per net with what it wrote and the time it took.

    --small    the smallest input each net takes (for CI); see "Input sizes".
    --opset N  ONNX opset to export (default 13; 9..17 as far as torch's
               exporter supports the net's operators there).
    --dtypes   besides float32's bounds (always), bounds for 16-bit storage:
               float16, bfloat16 (see "16-bit bounds"); default float32.

Layout of OUT_DIR/<net>/ (ONNX's backend-test layout plus a gradient
extension and tolerances):

    model.onnx              torch.onnx.export of the net, random weights
    test_data_set_0/        inference (eval mode)
        input_0.pb          the input, TensorProto named as the graph input
        output_0.pb         the eval-mode output, named as the graph output
        tolerances.json     {"output_0.pb": bound}
    test_data_set_1/        training step: forward + backward
        input_0.pb          the same input
        output_0.pb         forward output with BatchNorm in training mode
                            (batch statistics) and Dropout the identity
        grad_output_0.pb    the seed dy for output 0 (random, fixed seed)
        grad_input_0.pb     d sum(y * dy) / dx
        grad_<init>.pb      d sum(y * dy) / d<init> for every initializer
                            that is a trainable parameter (TensorProto name
                            = the initializer's name); BatchNorm running
                            statistics are buffers and get none
        tolerances.json     {file name: bound} for every output/grad file
    test_data_set_N/tolerances_float16.json, tolerances_bfloat16.json
                            with --dtypes: the same files' bounds for a run
                            in that storage type (same references)

All tensors are float32 TensorProtos (onnx.numpy_helper.from_array).  The
gradient files' TensorProto names are the names of the tensors they are
gradients of (grad_input_0.pb is named like the graph input, etc.).

Model export.  The model (weights=None, fixed seed, see "Weights") is
exported in eval() mode with training=TrainingMode.PRESERVE and
do_constant_folding=False, so that BatchNormalization stays a node (it is
not folded into the Conv before it) and initializers keep PyTorch's
parameter/buffer names ("layer1.0.conv1.weight").  The script checks this
and fails loudly otherwise: one BatchNormalization node per nn.BatchNorm2d
module, whose scale/B/mean/var inputs are that module's weight, bias,
running_mean, running_var; every initializer is a state_dict entry with
bit-identical values; every parameter that gets a gradient is an
initializer; onnx.checker passes; onnx.shape_inference infers the output
shape.  googlenet and inception_v3 are built with aux_logits=False and
init_weights=True.

Reference values are computed in float64: the model is copied and
converted with .double() (the float32 weights and input are exact in
float64); results are stored as float32.  For the training set every
BatchNorm module is put in train() mode and every other module stays in
eval() mode (Dropout and StochasticDepth are the identity, as in the
runner's training import; the running statistics that train-mode
BatchNorm updates belong to a throw-away copy).

Tolerances (relative L2 error ||ours - ref|| / ||ref|| per file).  For each
file PyTorch's own float32 results (the same model in float32 on CPU, same
input and dy) are measured against the float64 reference, along five
float32 paths: PyTorch's default kernels, channels-last memory format,
mkldnn (oneDNN) turned off, and the default kernels on the input with each
value moved by at most one float32 ulp (two fixed patterns: rounding noise
as another implementation's would enter); the largest distance d counts:
    outputs:   bound = max(1e-3, 4 * d(y32, y64))
    gradients: bound = max(1e-2, 4 * d(g32, g64))
(grad_input_0.pb is a gradient.)  Float32 gradients of nets with ReLU and
max-pooling are inherently noisy (rounding flips decisions), hence the
measured part; one path alone can be lucky, and each path flips a
different few of the values that lie within rounding of zero.  Measured on mnasnet1_0 at the
default size: a pre-ReLU value 5.7e-7 from zero (its channel's values are
~0.5) flips in two of the three paths, which moves grad_input_0 by 1.3% and
one BatchNorm's bias gradient by 3.5% there (and in dlcaffe), while the
default path stays at 2e-5.

16-bit bounds (--dtypes float16,bfloat16).  The references stay the float64
ones: one reference, a bound per storage type.  For each file the same
model is run under PyTorch's autocast to that type (torch.autocast on CUDA
when torch sees a GPU, else CPU autocast; torch 1.13's CPU autocast takes
only bfloat16, so there float16 is skipped with a message and no file is
written), the forward in autocast, backward outside it (PyTorch's recipe;
no loss scaling, like onnx_test_runner), the parameters float32, and the
same rule applied to autocast's largest distance d from float64:
    outputs:   bound = max(1e-3, 4 * d(y_amp, y64))
    gradients: bound = max(1e-2, 4 * d(g_amp, g64))
written to tolerances_<dtype>.json for the files tolerances.json has (the
gradients left out are float32's).  Paths: default kernels, channels-last,
and the input moved by at most one ulp of the 16-bit type (two patterns;
rounding noise at that type's spacing, as the float32 ulp paths at
float32's).  Not the oneDNN-off path: there torch 1.13's CPU convolutions
sum in bfloat16, 2 to 3x the default path's distance on squeezenet1_0,
which measures a worse kernel rather than rounding luck.  The per-dtype
line the script prints gives the largest bound, how much the other paths
widened a bound over the default path's, and how many training bounds are
>= 1 (a zero tensor, relative error 1, passes those: 16-bit gradients of
ReLU and batch-norm nets at batch 2 are that far off; on CPU bfloat16,
squeezenet1_0 --small has 26 of 54, resnet18 at the default size 55 of 64).
Where autocast fails (an operator it lacks: torch 1.13's CPU autocast has
no bfloat16 backward of ReLU6's hardtanh, mobilenet_v2, and mixes types in
convnext_small) or its distance is not finite (float16 overflow), the net
gets no tolerances_<dtype>.json (its float32 files are written as ever),
the script says so, and onnx_test_runner fails the net in that type.

Gradients left out.  A parameter's gradient file is left out when the
gradient is mathematically zero, since its float32 value is rounding noise
that no relative bound can judge.  Rule (numerical, in float64):
    left out  iff  g64 is None  or  ||g64|| <= 1e-6 * ||g32 - g64||.
A gradient that cancels exactly in exact arithmetic (e.g. the bias of a
conv whose output feeds a training-mode BatchNorm: batch-norm subtracts
the mean) is float64 rounding noise, ~1e-16 of its contributions, while
PyTorch's float32 value is float32 noise, ~1e-7 of them: the ratio is
~1e-9.  A true gradient has ||g64|| >= ||g32 - g64|| unless float32 is
more than 100% off.  The script checks this against a structural rule
and fails if the two disagree: a bias (BatchNormalization B, Conv/Gemm
bias) is structurally zero when every use of its node's output ends in a
training-mode BatchNormalization through ops that carry a per-channel
constant offset through unchanged (1x1 unpadded Conv, Add/Sub, channel
Concat, MaxPool, unpadded AveragePool, GlobalAveragePool).  In torchvision
no conv feeding a BatchNorm has a bias, but the nets with linear
bottlenecks (mobilenet_v2/v3, mnasnet, efficientnet, shufflenet) have
BatchNorms whose output goes only into a 1x1 conv and its BatchNorm: the
B (beta) of those BatchNorms has a zero gradient and is left out.

Weights.  torch.manual_seed(crc32(net name)); torchvision's own
initialisation; then, so that eval and training differ and activations
stay of order one over depth:
  * BatchNorm / LayerNorm affine: weight ~ U(0.5, 1.5), bias ~ N(0, 0.1).
  * BatchNorm running statistics, calibrated in one eval-mode pass (layer
    by layer, in execution order) over a batch of 8: the test input's 2
    images and 6 more N(0, 1) images.  With m, v the batch mean and
    (biased) variance of the BatchNorm's input in that pass,
        running_mean = m + 0.1 * sqrt(v) * N(0, 1)
        running_var  = v * U(0.5, 1.5)   (v floored at 1e-4 * mean(v))
    i.e. N(0, 0.1) and U(0.5, 1.5) in units of the input's own scale.
    Why: with raw N(0, 0.1) / U(0.5, 1.5) statistics, nets whose convs are
    initialised small (googlenet: std 0.01) vanish in eval mode.  With
    statistics of random images other than the test input, the deep
    stages (1x2 or 3x4 per image, hundreds of channels) have fewer samples
    than channels and the test input's eval activations grow with depth
    (efficientnet_b0 --small: output std x30).  With the test input alone
    (4 samples per channel in the last stage), channels whose few samples
    agree get a tiny variance and eval-mode BatchNorm, which unlike
    training mode does not subtract the batch's own mean, amplifies
    float32 rounding by |mean| / std (PyTorch's own float32 eval output of
    efficientnet_b0 was 3% off).  Eval still differs from training: the
    script prints ||y_train - y_eval|| / ||y_eval||: 0.3 to 1.1 for the
    nets with BatchNorm.
  * Conv/Linear biases that torchvision initialises to a constant (zeros):
    N(0, 0.1 * std of the layer's output without bias) (constant tensors
    would also be merged by the exporter's initializer de-duplication).
  * convnext's layer_scale (1e-6, which makes every block an identity):
    U(0.5, 1.5) * 0.3 * std(block input) / std(branch output).
  * nets without normalization whose activations shrink with torchvision's
    init (alexnet, vgg16): every Conv/Linear weight and bias is multiplied
    by one scalar, chosen in the calibration pass so the layer's output
    has standard deviation 1 (LSUV-style).
The eval and the training output's standard deviation must lie in
[5e-3, 2e2], and every Conv/Linear/norm module's output's in [1e-3, 1e3],
or the script fails.

Input sizes (batch 2, never square; H x W):
    default: 96x128 (final feature map 3x4) for most; inception_v3 107x139
             (2x3); alexnet 224x416 (6x12) and vgg16 224x448 (7x14): their
             AdaptiveAvgPool2d((6,6) / (7,7)) exports only where the
             feature map is a multiple of the pooled size.
    --small: 32x48 (stride-32 nets, final map 1x2 or 1x1: 32 is their total
             stride; through padding they would take even 1x1 inputs, but
             then every stage sees a 1x1 map); densenet161 and
             convnext_small 32x64 (1x2); squeezenet1_0 21x37 (1x2);
             inception_v3 75x107 (1x2, 75 is its minimum); alexnet 224x226
             and vgg16 224x240 (6x6 / 7x7, the smallest they export at).
Input and dy are N(0, 1) from a fixed seed per net.
"""

import argparse
import contextlib
import copy
import inspect
import json
import math
import os
import sys
import time
import zlib

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

BATCH = 2

# name: (default H, W), (small H, W), extra constructor kwargs, LSUV rescale
NETS = {
    "alexnet": ((224, 416), (224, 226), {}, True),
    "resnet18": ((96, 128), (32, 48), {}, False),
    "resnet50": ((96, 128), (32, 48), {}, False),
    "convnext_small": ((96, 128), (32, 64), {}, False),
    "vgg16": ((224, 448), (224, 240), {}, True),
    "squeezenet1_0": ((96, 128), (21, 37), {}, False),
    "googlenet": ((96, 128), (32, 48), {"aux_logits": False, "init_weights": True}, False),
    "densenet161": ((96, 128), (32, 64), {}, False),
    "inception_v3": ((107, 139), (75, 107), {"aux_logits": False, "init_weights": True}, False),
    "shufflenet_v2_x1_0": ((96, 128), (32, 48), {}, False),
    "mobilenet_v2": ((96, 128), (32, 48), {}, False),
    "mobilenet_v3_large": ((96, 128), (32, 48), {}, False),
    "mobilenet_v3_small": ((96, 128), (32, 48), {}, False),
    "resnext50_32x4d": ((96, 128), (32, 48), {}, False),
    "wide_resnet50_2": ((96, 128), (32, 48), {}, False),
    "mnasnet1_0": ((96, 128), (32, 48), {}, False),
    "efficientnet_b0": ((96, 128), (32, 48), {}, False),
    "efficientnet_b4": ((96, 128), (32, 48), {}, False),
    "regnet_y_400mf": ((96, 128), (32, 48), {}, False),
}

# Segmentation nets (torchvision.models.segmentation, aux_loss off): their
# per-pixel class scores, the dict's "out", are the output. Not in the
# default list of --nets (the 19 classification nets above).
SEGMENTATION = {
    "fcn_resnet50": ((96, 128), (32, 48), {"aux_loss": False, "weights_backbone": None}, False),
    "deeplabv3_mobilenet_v3_large": ((96, 128), (32, 48),
                                     {"aux_loss": False, "weights_backbone": None}, False),
}


class SegmentationOutput(torch.nn.Module):
    """A segmentation net's "out" alone (torch.onnx.export takes tensors);
    its parameters keep their names under "net.". """

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def spec(net):
    return NETS[net] if net in NETS else SEGMENTATION[net]

# BatchNorm running statistics are calibrated on the test input plus this
# many more random images (see "Weights" in the docstring).
CAL_EXTRA = 6
INPUT_NAME = "input"
OUTPUT_NAME = "output"
LEAVE_OUT_RATIO = 1e-6
STD_RANGE = (5e-3, 2e2)          # output
LAYER_STD_RANGE = (1e-3, 1e3)    # every Conv/Linear/norm output

BN_TYPES = (torch.nn.modules.batchnorm._BatchNorm,)
NORM_TYPES = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm, torch.nn.GroupNorm)


class GenerationError(RuntimeError):
    pass


def fail(net, msg):
    raise GenerationError(f"{net}: {msg}")


def rel_l2(a, ref):
    a = a.detach().double()
    ref = ref.detach().double()
    num = torch.linalg.vector_norm(a - ref).item()
    den = torch.linalg.vector_norm(ref).item()
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def write_tensor(path, array, name):
    tensor = numpy_helper.from_array(np.ascontiguousarray(array).astype(np.float32), name=name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def to_np(t):
    return t.detach().cpu().numpy()


def build(net, seed):
    _, _, kwargs, _ = spec(net)
    torch.manual_seed(seed)
    if net in SEGMENTATION:
        return SegmentationOutput(getattr(torchvision.models.segmentation, net)(weights=None, **kwargs)).eval()
    model = getattr(torchvision.models, net)(weights=None, **kwargs)
    return model.eval()


def is_constant(t):
    return t.numel() > 1 and bool((t == t.reshape(-1)[0]).all())


@torch.no_grad()
def randomize(net, model, x_cal, gen):
    """Randomise constants and calibrate statistics (see the docstring)."""
    rescale = spec(net)[3]

    def normal(shape, std):
        return torch.randn(shape, generator=gen) * std

    def uniform(shape, lo, hi):
        return torch.rand(shape, generator=gen) * (hi - lo) + lo

    for mod in model.modules():
        if isinstance(mod, NORM_TYPES) and getattr(mod, "weight", None) is not None:
            mod.weight.copy_(uniform(mod.weight.shape, 0.5, 1.5))
            mod.bias.copy_(normal(mod.bias.shape, 0.1))

    hooks = []
    const_bias = set()
    for mod in model.modules():
        if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)) and mod.bias is not None:
            if is_constant(mod.bias) or mod.bias.numel() == 1:
                const_bias.add(mod)

    def linear_hook(mod, inputs, out):
        if rescale:
            s = 1.0 / max(out.std().item(), 1e-30)
            mod.weight.mul_(s)
            if mod.bias is not None:
                mod.bias.mul_(s)
            out = out * s
        if mod in const_bias:
            shape = [1] * out.dim()
            shape[1 if isinstance(mod, torch.nn.Conv2d) else -1] = -1
            no_bias = out - mod.bias.reshape(shape)
            mod.bias.copy_(normal(mod.bias.shape, 0.1 * no_bias.std().item()))
            out = no_bias + mod.bias.reshape(shape)
        return out

    def bn_pre_hook(mod, inputs):
        x = inputs[0]
        dims = [d for d in range(x.dim()) if d != 1]
        mean = x.mean(dim=dims)
        var = x.var(dim=dims, unbiased=False)
        var = var.clamp_min(1e-4 * var.mean().item() + 1e-12)
        mod.running_mean.copy_(mean + 0.1 * var.sqrt() * normal(mean.shape, 1.0))
        mod.running_var.copy_(var * uniform(var.shape, 0.5, 1.5))

    def layer_scale_hook(block_mod, inputs, out, owner=None):
        ratio = 0.3 * inputs[0].std().item() / max(out.std().item(), 1e-30)
        owner.layer_scale.copy_(uniform(owner.layer_scale.shape, 0.5, 1.5) * ratio)

    for mod in model.modules():
        if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
            hooks.append(mod.register_forward_hook(linear_hook))
        if isinstance(mod, BN_TYPES):
            hooks.append(mod.register_forward_pre_hook(bn_pre_hook))
        if hasattr(mod, "layer_scale") and isinstance(mod.layer_scale, torch.nn.Parameter):
            hooks.append(mod.block.register_forward_hook(
                lambda m, i, o, owner=mod: layer_scale_hook(m, i, o, owner)))
    model(x_cal)
    for h in hooks:
        h.remove()

    # Any other constant parameter would be merged with its twins by the
    # exporter's de-duplication and test little: there should be none left.
    for name, p in model.named_parameters():
        if is_constant(p):
            fail(net, f"parameter {name} is still constant after randomisation")


def structurally_zero_biases(graph, init_names):
    """Initializers added per channel to a tensor whose every use ends in a
    training-mode BatchNormalization through ops that carry a per-channel
    constant offset through unchanged in shape (1x1 unpadded Conv, Add/Sub,
    channel Concat, MaxPool, unpadded AveragePool, GlobalAveragePool,
    Identity/Dropout): batch-norm subtracts the batch mean, so the gradient
    of such a bias is exactly zero in exact arithmetic."""
    consumers = {}
    for nd in graph.node:
        for k, i in enumerate(nd.input):
            consumers.setdefault(i, []).append((nd, k))
    graph_outputs = {o.name for o in graph.output}

    def attr(nd, name, default):
        for a in nd.attribute:
            if a.name == name:
                return onnx.helper.get_attribute_value(a)
        return default

    memo = {}

    def removable(t):
        if t in memo:
            return memo[t]
        memo[t] = False  # cycles cannot happen; guards recursion
        ok = t not in graph_outputs and bool(consumers.get(t))
        for nd, k in consumers.get(t, []):
            if not ok:
                break
            op = nd.op_type
            if op == "BatchNormalization":
                ok = k == 0
            elif op == "Conv":
                pads = attr(nd, "pads", [0, 0, 0, 0])
                ok = (k == 0 and not any(pads) and attr(nd, "auto_pad", b"NOTSET") in (b"NOTSET", b"VALID")
                      and len(nd.input) > 1 and nd.input[1] in init_names
                      and all(d == 1 for d in _init_shape(graph, nd.input[1])[2:])
                      and removable(nd.output[0]))
            elif op in ("Add", "Sub", "Identity", "Dropout", "MaxPool", "GlobalAveragePool"):
                if op == "MaxPool" and len(nd.output) > 1 and nd.output[1]:
                    ok = False
                else:
                    ok = removable(nd.output[0])
            elif op == "AveragePool":
                ok = not any(attr(nd, "pads", [])) and removable(nd.output[0])
            elif op == "Concat":
                ok = attr(nd, "axis", None) == 1 and removable(nd.output[0])
            else:
                ok = False
        memo[t] = ok
        return ok

    zero = set()
    for nd in graph.node:
        if nd.op_type in ("BatchNormalization", "Conv", "Gemm") and len(nd.input) > 2:
            if nd.input[2] in init_names and removable(nd.output[0]):
                zero.add(nd.input[2])
    return zero


def _init_shape(graph, name):
    for t in graph.initializer:
        if t.name == name:
            return list(t.dims)
    return []


def set_bn_train(model):
    model.eval()
    for mod in model.modules():
        if isinstance(mod, BN_TYPES):
            mod.train()
    return model


def export_and_verify(net, model, x, path, opset, out_shape):
    with torch.no_grad():
        torch.onnx.export(
            model, (x,), path,
            input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
            opset_version=opset,
            training=torch.onnx.TrainingMode.PRESERVE,
            do_constant_folding=False,
            export_params=True,
            keep_initializers_as_inputs=False,
            # Newer PyTorch exports through torch.export by default, at opset
            # 18 and up; the TorchScript exporter writes the opset asked for.
            **({"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}),
        )
    if model.training:
        fail(net, "model left eval mode during export")
    onnx.checker.check_model(path)
    proto = onnx.load(path)
    graph = proto.graph

    inits = {t.name: t for t in graph.initializer}
    state = model.state_dict()
    bad = [n for n in inits if n not in state]
    if bad:
        fail(net, f"initializers that are not PyTorch parameter/buffer names: {bad[:10]}")
    for n, t in inits.items():
        ref = to_np(state[n])
        val = numpy_helper.to_array(t)
        if val.shape != ref.shape or val.dtype != ref.dtype or not np.array_equal(val, ref):
            fail(net, f"initializer {n} differs from the PyTorch tensor")

    graph_inputs = [i.name for i in graph.input if i.name not in inits]
    graph_outputs = [o.name for o in graph.output]
    if graph_inputs != [INPUT_NAME] or graph_outputs != [OUTPUT_NAME]:
        fail(net, f"graph inputs {graph_inputs}, outputs {graph_outputs}")

    # BatchNormalization must stay a node, one per BatchNorm module.
    bn_modules = {n for n, m in model.named_modules() if isinstance(m, BN_TYPES)}
    bn_nodes = [nd for nd in graph.node if nd.op_type == "BatchNormalization"]
    if len(bn_nodes) != len(bn_modules):
        fail(net, f"{len(bn_nodes)} BatchNormalization nodes for {len(bn_modules)} BatchNorm modules"
                  " (folded into Conv?)")
    seen = set()
    for nd in bn_nodes:
        ins = list(nd.input)
        owner = ins[1][: -len(".weight")] if ins[1].endswith(".weight") else None
        want = [f"{owner}.weight", f"{owner}.bias", f"{owner}.running_mean", f"{owner}.running_var"]
        if owner not in bn_modules or ins[1:5] != want or any(w not in inits for w in want):
            fail(net, f"BatchNormalization node {nd.name} has inputs {ins[1:]}")
        seen.add(owner)
    if seen != bn_modules:
        fail(net, "BatchNorm modules without a node: %s" % sorted(bn_modules - seen)[:5])

    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    out = [o for o in inferred.graph.output if o.name == OUTPUT_NAME][0]
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in out.type.tensor_type.shape.dim]
    if dims != list(out_shape):
        fail(net, f"shape inference gives output {dims}, PyTorch {list(out_shape)}")
    # value_info must cover (nearly) every node output
    known = {v.name for v in inferred.graph.value_info} | set(graph_outputs)
    unknown = [o for nd in inferred.graph.node for o in nd.output if o and o not in known]
    if unknown:
        fail(net, f"shape inference left {len(unknown)} tensors without a shape, e.g. {unknown[:3]}")

    bias_into_bn = structurally_zero_biases(graph, set(inits))
    node_count = len(graph.node)
    return set(inits), bias_into_bn, node_count, len(bn_nodes)


FLOAT32_PATHS = ("default", "channels_last", "no_mkldnn", "ulp_1", "ulp_2")


def float32_paths(model, x, run):
    """run(model copy, x) along each of PyTorch's float32 paths; the ulp_N
    paths feed x with each value moved by at most one float32 ulp (a fixed
    pseudo-random pattern N): rounding noise at the input, the way another
    implementation's rounding shows up a layer later."""
    results = []
    for path in FLOAT32_PATHS:
        m, xx = copy.deepcopy(model), x
        if path.startswith("ulp_"):
            g = torch.Generator().manual_seed(int(path[4:]))
            step = torch.randint(-1, 2, x.shape, generator=g).to(torch.float32)
            xx = torch.nextafter(x, x + step * torch.where(x == 0, 1.0, x.abs()))
        if path == "channels_last":
            m = m.to(memory_format=torch.channels_last)
            xx = x.contiguous(memory_format=torch.channels_last)
        flags = torch.backends.mkldnn.flags(enabled=False) if path == "no_mkldnn" else contextlib.nullcontext()
        with flags:
            results.append(run(m, xx))
        del m
    return results


def forward_backward(model, x, dy, amp=contextlib.nullcontext):
    """Training-set forward/backward; returns y, dx, {param name: grad}.
    amp: a context for the forward pass (autocast); backward runs outside
    it, as PyTorch's autocast recipe has it."""
    set_bn_train(model)
    for p in model.parameters():
        p.grad = None
    xg = x.clone().requires_grad_(True)
    with amp():
        y = model(xg)
    (y * dy.to(y.device)).sum().backward()
    grads = {n: (p.grad.detach().clone() if p.grad is not None else None)
             for n, p in model.named_parameters()}
    return y.detach(), xg.grad.detach(), grads


# 16-bit types that --dtypes takes: (torch dtype, explicit mantissa bits,
# smallest subnormal's exponent; None where there are no subnormals that
# matter here: bfloat16 has float32's exponent range).
AUTOCAST_DTYPES = {
    "float16": (torch.float16, 10, -24),
    "bfloat16": (torch.bfloat16, 7, None),
}
DTYPES = ("float32",) + tuple(AUTOCAST_DTYPES)


def tolerance_file(dtype):
    """tolerances.json for float32, tolerances_<dtype>.json for the others."""
    return "tolerances.json" if dtype == "float32" else f"tolerances_{dtype}.json"


def move_by_ulp(x, pattern, dtype):
    """x with each value moved by at most one ulp of `dtype`'s spacing at that
    value (a fixed pseudo-random pattern, as float32_paths' ulp_N at float32's
    spacing): the rounding noise another 16-bit implementation's would add."""
    _, mant_bits, min_exp = AUTOCAST_DTYPES[dtype]
    g = torch.Generator().manual_seed(pattern)
    step = torch.randint(-1, 2, x.shape, generator=g).to(torch.float32)
    _, e = torch.frexp(x)  # |x| in [2^(e-1), 2^e)
    exponent = e - 1 - mant_bits
    if min_exp is not None:
        exponent = exponent.clamp_min(min_exp)
    ulp = torch.ldexp(torch.ones_like(x), exponent)
    return x + step * torch.where(x == 0, torch.zeros_like(x), ulp)


def autocast_device(dtype):
    """Where PyTorch autocasts to `dtype` here: 'cuda' when a GPU is there,
    else 'cpu' if this torch's CPU autocast takes the type; None (with the
    reason) when neither does."""
    torch_dtype = AUTOCAST_DTYPES[dtype][0]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        conv = torch.nn.Conv2d(3, 4, 3).to(device)
        with torch.no_grad(), torch.autocast(device, dtype=torch_dtype):
            got = conv(torch.ones(1, 3, 5, 5, device=device)).dtype
    except (RuntimeError, ValueError) as e:
        return None, f"torch {torch.__version__} has no {device.upper()} autocast to {dtype} ({e})"
    if got != torch_dtype:
        return None, f"torch {torch.__version__}'s {device.upper()} autocast to {dtype} gives {got} convolutions"
    return device, None


# float32_paths' paths but "no_mkldnn": without oneDNN (or cuDNN) PyTorch
# takes kernels that sum in the 16-bit type (torch 1.13's CPU convolutions
# in bfloat16: 2 to 3x the default path's distance on squeezenet1_0), which
# measures a worse kernel rather than the rounding luck the paths are for.
AUTOCAST_PATHS = ("default", "channels_last", "ulp_1", "ulp_2")


def autocast_paths(model, x, run, dtype, device):
    """run(model copy on `device`, x there, amp) along AUTOCAST_PATHS:
    default kernels; channels-last; and x moved by one ulp of `dtype`
    (move_by_ulp, patterns 1 and 2). amp is the autocast context the
    forward runs in. Results come back to the CPU."""
    torch_dtype = AUTOCAST_DTYPES[dtype][0]

    def amp():
        return torch.autocast(device, dtype=torch_dtype)

    def to_cpu(r):
        if torch.is_tensor(r):
            return r.cpu()
        if isinstance(r, dict):
            return {k: to_cpu(v) for k, v in r.items()}
        if isinstance(r, (tuple, list)):
            return type(r)(to_cpu(v) for v in r)
        return r

    results = []
    for path in AUTOCAST_PATHS:
        m, xx = copy.deepcopy(model).to(device), x
        if path.startswith("ulp_"):
            xx = move_by_ulp(x, int(path[4:]), dtype)
        xx = xx.to(device)
        if path == "channels_last":
            m = m.to(memory_format=torch.channels_last)
            xx = xx.contiguous(memory_format=torch.channels_last)
        results.append(to_cpu(run(m, xx, amp)))
        del m
    return results


class LayerStds:
    """Standard deviation of every Conv/Linear/norm module's output."""

    def __init__(self, model):
        self.stds = []
        self.hooks = [m.register_forward_hook(self.hook) for m in model.modules()
                      if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear) + NORM_TYPES)]

    def hook(self, mod, inputs, out):
        self.stds.append(out.detach().double().std().item())

    def done(self):
        for h in self.hooks:
            h.remove()
        return min(self.stds), max(self.stds)


def act_std(y):
    return y.double().std().item()


def autocast_bounds(refs, runs, pick, floors, dtype):
    """{file: bound} for one 16-bit dtype, from autocast_paths' runs: the
    float32 rule (max(floor, 4 * d), d the largest distance over the paths)
    on autocast's distances; and, as a diagnostic, the largest ratio of a
    bound to the one the default path alone would give. A file whose
    distance is not finite (a float16 overflow) gets no bound: raises."""
    bounds, widest = {}, 1.0
    for fname, ref in refs.items():
        d = [rel_l2(pick(r, fname), ref) for r in runs]
        if not all(math.isfinite(v) for v in d):
            raise ArithmeticError(f"{dtype} autocast gives a non-finite {fname} (distances {d})")
        floor = floors[fname]
        bounds[fname] = max(floor, 4 * max(d))
        widest = max(widest, bounds[fname] / max(floor, 4 * d[0]))
    return bounds, widest


def generate(net, out_dir, small, opset, dtypes=()):
    """dtypes: [(16-bit dtype name, autocast device)] to measure besides float32."""
    t0 = time.time()
    seed = zlib.crc32(net.encode())
    hw = spec(net)[1] if small else spec(net)[0]
    shape = (BATCH, 3) + tuple(hw)
    if hw[0] == hw[1]:
        fail(net, "input must not be square")

    rng = np.random.RandomState(seed % (2 ** 31))
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    x_cal = torch.cat([x, torch.from_numpy(
        rng.standard_normal((CAL_EXTRA,) + shape[1:]).astype(np.float32))])
    gen = torch.Generator().manual_seed(seed)

    model = build(net, seed)
    randomize(net, model, x_cal, gen)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(True)

    def eval_forward(m, xx, amp=contextlib.nullcontext):
        with torch.no_grad(), amp():
            return m(xx).contiguous()

    y32_evals = float32_paths(model, x, eval_forward)
    y32_eval = y32_evals[0]
    if not torch.is_tensor(y32_eval):
        fail(net, f"model returns {type(y32_eval)}, not a tensor")
    rng_dy = np.random.RandomState((seed + 1) % (2 ** 31))
    dy = torch.from_numpy(rng_dy.standard_normal(tuple(y32_eval.shape)).astype(np.float32))

    net_dir = os.path.join(out_dir, net)
    set0 = os.path.join(net_dir, "test_data_set_0")
    set1 = os.path.join(net_dir, "test_data_set_1")
    os.makedirs(set0, exist_ok=True)
    os.makedirs(set1, exist_ok=True)
    model_path = os.path.join(net_dir, "model.onnx")
    init_names, bias_into_bn, n_nodes, n_bn = export_and_verify(
        net, model, x, model_path, opset, tuple(y32_eval.shape))

    # ---- test_data_set_0: eval forward -----------------------------------
    m64 = copy.deepcopy(model).double().eval()
    probe = LayerStds(m64)
    with torch.no_grad():
        y64_eval = m64(x.double())
    eval_range = probe.done()
    for s in (act_std(y64_eval),):
        if not (STD_RANGE[0] <= s <= STD_RANGE[1]):
            fail(net, f"eval output std {s:.3g} outside {STD_RANGE}")
    write_tensor(os.path.join(set0, "input_0.pb"), to_np(x), INPUT_NAME)
    write_tensor(os.path.join(set0, "output_0.pb"), to_np(y64_eval), OUTPUT_NAME)
    tol0 = {"output_0.pb": max(1e-3, 4 * max(rel_l2(y, y64_eval) for y in y32_evals))}
    with open(os.path.join(set0, "tolerances.json"), "w") as f:
        json.dump(tol0, f, indent=1, sort_keys=True)
    del y32_eval, y32_evals
    # The 16-bit dtypes' bounds: PyTorch's autocast against the same reference.
    # A 16-bit bound file from an earlier generation would not be this one's.
    for stale in AUTOCAST_DTYPES:
        for d in (set0, set1):
            if os.path.exists(os.path.join(d, tolerance_file(stale))):
                os.remove(os.path.join(d, tolerance_file(stale)))
    amp_info = {}
    for dtype, device in dtypes:
        t_dtype = time.time()
        try:
            runs = autocast_paths(model, x, eval_forward, dtype, device)
            bounds, widest = autocast_bounds({"output_0.pb": y64_eval}, runs, lambda r, f: r,
                                             {"output_0.pb": 1e-3}, dtype)
        except (ArithmeticError, RuntimeError) as e:  # RuntimeError: an op autocast lacks
            amp_info[dtype] = {"device": device, "error": f"test_data_set_0: {type(e).__name__}: {e}"}
            continue
        with open(os.path.join(set0, tolerance_file(dtype)), "w") as f:
            json.dump(bounds, f, indent=1, sort_keys=True)
        amp_info[dtype] = {"device": device, "eval_tol": bounds["output_0.pb"], "widest": widest,
                           "seconds": time.time() - t_dtype}
        del runs

    # ---- test_data_set_1: training forward + backward ---------------------
    probe = LayerStds(m64)
    y64, dx64, g64 = forward_backward(m64, x.double(), dy.double())
    train_range = probe.done()
    for what, (lo, hi) in (("eval", eval_range), ("training", train_range)):
        if lo < LAYER_STD_RANGE[0] or hi > LAYER_STD_RANGE[1]:
            fail(net, f"{what} layer output stds span [{lo:.3g}, {hi:.3g}], outside {LAYER_STD_RANGE}")
    del m64
    if not (STD_RANGE[0] <= act_std(y64) <= STD_RANGE[1]):
        fail(net, f"training output std {act_std(y64):.3g} outside {STD_RANGE}")
    eval_vs_train = rel_l2(y64, y64_eval)
    runs32 = float32_paths(model, x, lambda m, xx: forward_backward(m, xx, dy))

    write_tensor(os.path.join(set1, "input_0.pb"), to_np(x), INPUT_NAME)
    write_tensor(os.path.join(set1, "output_0.pb"), to_np(y64), OUTPUT_NAME)
    write_tensor(os.path.join(set1, "grad_output_0.pb"), to_np(dy), OUTPUT_NAME)
    write_tensor(os.path.join(set1, "grad_input_0.pb"), to_np(dx64), INPUT_NAME)
    tol1 = {
        "output_0.pb": max(1e-3, 4 * max(rel_l2(r[0], y64) for r in runs32)),
        "grad_input_0.pb": max(1e-2, 4 * max(rel_l2(r[1], dx64) for r in runs32)),
    }
    written, left_out, kept = 0, [], []
    min_kept_ratio, max_left_ratio = math.inf, 0.0
    for name, p in model.named_parameters():
        g = g64[name]
        if name not in init_names:
            if g is None or torch.count_nonzero(g).item() == 0:
                continue  # unused by the exported graph and by PyTorch
            fail(net, f"parameter {name} has a gradient but is no initializer")
        gnorm = 0.0 if g is None else torch.linalg.vector_norm(g).item()
        noise = 0.0 if g is None else max(torch.linalg.vector_norm(r[2][name].double() - g).item()
                                          for r in runs32)
        zero = g is None or gnorm <= LEAVE_OUT_RATIO * noise
        if (name in bias_into_bn) != zero:
            fail(net, f"{name}: numerical zero-gradient rule says {zero}, structural says"
                      f" {name in bias_into_bn} (|g64| {gnorm:.3g}, |g32-g64| {noise:.3g})")
        if zero:
            left_out.append(name)
            if g is not None and noise > 0:
                max_left_ratio = max(max_left_ratio, gnorm / noise)
            continue
        if noise > 0:
            min_kept_ratio = min(min_kept_ratio, gnorm / noise)
        fname = f"grad_{name}.pb"
        write_tensor(os.path.join(set1, fname), to_np(g), name)
        tol1[fname] = max(1e-2, 4 * max(rel_l2(r[2][name], g) for r in runs32))
        written += 1
        kept.append(name)
    with open(os.path.join(set1, "tolerances.json"), "w") as f:
        json.dump(tol1, f, indent=1, sort_keys=True)
    del runs32

    # The same files' bounds in each 16-bit dtype (one reference, several bounds).
    refs = {"output_0.pb": y64, "grad_input_0.pb": dx64}
    refs.update({f"grad_{name}.pb": g64[name] for name in kept})
    floors = {fname: 1e-3 if fname.startswith("output_") else 1e-2 for fname in refs}
    param_of = {f"grad_{name}.pb": name for name in kept}

    def pick(r, fname):
        return r[0] if fname == "output_0.pb" else r[1] if fname == "grad_input_0.pb" else r[2][param_of[fname]]

    for dtype, device in dtypes:
        if "error" in amp_info[dtype]:
            continue
        t_dtype = time.time()
        try:
            runs = autocast_paths(model, x, lambda m, xx, amp: forward_backward(m, xx, dy, amp),
                                  dtype, device)
            bounds, widest = autocast_bounds(refs, runs, pick, floors, dtype)
        except (ArithmeticError, RuntimeError) as e:
            os.remove(os.path.join(set0, tolerance_file(dtype)))
            amp_info[dtype] = {"device": device, "error": f"test_data_set_1: {type(e).__name__}: {e}"}
            continue
        del runs
        with open(os.path.join(set1, tolerance_file(dtype)), "w") as f:
            json.dump(bounds, f, indent=1, sort_keys=True)
        worst_dt = max(bounds.items(), key=lambda kv: kv[1])
        amp_info[dtype].update(max_tol=worst_dt[1], max_tol_file=worst_dt[0], files=len(bounds),
                               at_least_1=sum(b >= 1 for b in bounds.values()),
                               widest=max(widest, amp_info[dtype]["widest"]),
                               seconds=amp_info[dtype]["seconds"] + time.time() - t_dtype)

    worst = max(tol1.items(), key=lambda kv: kv[1])
    n_params = sum(p.numel() for p in model.parameters())
    info = {
        "net": net, "input": list(shape), "opset": opset, "params": n_params,
        "nodes": n_nodes, "bn_nodes": n_bn, "grads_written": written,
        "grads_left_out": left_out, "eval_tol": tol0["output_0.pb"],
        "max_tol": worst[1], "max_tol_file": worst[0],
        "eval_out_std": act_std(y64_eval), "train_out_std": act_std(y64),
        "eval_vs_train": eval_vs_train,
        "eval_layer_std": eval_range, "train_layer_std": train_range, "min_kept_ratio": min_kept_ratio,
        "max_left_out_ratio": max_left_ratio,
        "autocast": amp_info,
        "seconds": time.time() - t0,
    }
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--nets", default=",".join(NETS),
                    help="comma-separated subset of: " + ",".join(list(NETS) + list(SEGMENTATION))
                    + " (default: the first 19)")
    ap.add_argument("--small", action="store_true", help="smallest inputs (CI)")
    ap.add_argument("--opset", type=int, default=13, help="ONNX opset (9..17, default 13)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    ap.add_argument("--summary", help="also write the per-net lines as JSON to this file")
    ap.add_argument("--dtypes", default="float32",
                    help="comma-separated: float32 (always measured: tolerances.json), float16,"
                         " bfloat16 (PyTorch autocast's distance: tolerances_<dtype>.json);"
                         " default float32")
    args = ap.parse_args()

    nets = [n for n in args.nets.split(",") if n]
    unknown = [n for n in nets if n not in NETS and n not in SEGMENTATION]
    if unknown:
        ap.error(f"unknown nets {unknown}; known: {','.join(list(NETS) + list(SEGMENTATION))}")
    if not 9 <= args.opset <= 17:
        ap.error("--opset must be in 9..17")
    asked = [d for d in args.dtypes.split(",") if d]
    if any(d not in DTYPES for d in asked):
        ap.error(f"--dtypes takes {','.join(DTYPES)}")
    torch.set_num_threads(args.threads)
    os.makedirs(args.out_dir, exist_ok=True)
    dtypes, skipped = [], []
    for dtype in (d for d in AUTOCAST_DTYPES if d in asked):
        device, why = autocast_device(dtype)
        if device is None:
            skipped.append(dtype)
            print(f"{dtype}: skipped: {why}; no {tolerance_file(dtype)} is written", flush=True)
        else:
            dtypes.append((dtype, device))
            gpu = f" ({torch.cuda.get_device_name()})" if device == "cuda" else ""
            print(f"{dtype}: bounds from torch {torch.__version__}'s autocast on {device}{gpu}", flush=True)

    summary, failed = [], []
    for net in nets:
        try:
            info = generate(net, args.out_dir, args.small, args.opset, dtypes)
        except Exception as e:  # report and go on with the other nets
            failed.append(net)
            print(f"{net}: FAILED: {type(e).__name__}: {e}", flush=True)
            continue
        summary.append(info)
        print(f"{net}: {info['seconds']:.1f}s input {'x'.join(map(str, info['input']))}"
              f" opset {info['opset']} params {info['params']} nodes {info['nodes']}"
              f" BN {info['bn_nodes']} grads {info['grads_written']}"
              f" (left out {len(info['grads_left_out'])};"
              f" |g64|/|g32-g64| kept >= {info['min_kept_ratio']:.3g},"
              f" left out <= {info['max_left_out_ratio']:.3g})"
              f" out std eval {info['eval_out_std']:.3g} train {info['train_out_std']:.3g}"
              f" layers eval [{info['eval_layer_std'][0]:.2g}, {info['eval_layer_std'][1]:.2g}]"
              f" train [{info['train_layer_std'][0]:.2g}, {info['train_layer_std'][1]:.2g}]"
              f" |train-eval|/|eval| {info['eval_vs_train']:.3g}"
              f" tol eval {info['eval_tol']:.3g} max {info['max_tol']:.3g} ({info['max_tol_file']})",
              flush=True)
        for dtype, amp in info["autocast"].items():
            if "error" in amp:
                print(f"  {net} {dtype}: NO BOUNDS ({amp['error']}): the runner fails this net in {dtype}",
                      flush=True)
                continue
            print(f"  {net} {dtype} ({amp['device']} autocast, {amp['seconds']:.1f}s):"
                  f" tol eval {amp['eval_tol']:.3g} max {amp['max_tol']:.3g} ({amp['max_tol_file']});"
                  f" training bounds >= 1 (a zero tensor passes them): {amp['at_least_1']} of {amp['files']};"
                  f" the other paths widen a bound up to {amp['widest']:.3g}x the default path's",
                  flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f, indent=1)
    if failed:
        print(f"FAILED: {','.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
