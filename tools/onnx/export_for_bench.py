#!/usr/bin/python3
"""Exports torchvision networks (random weights) as ONNX models for
bench/bench_nets.sh's ONNX_DIR: batch B, 3 x 224 x 224 like
../shared/gpu/torch_ref.py, eval mode with training=PRESERVE and no constant
folding, so BatchNormalization stays a node (dlcaffe folds it into the
convolution for inference and runs it on batch statistics for training).
googlenet and inception_v3 are built without their auxiliary classifiers
(PyTorch's reference trains them with theirs: a little more work on its side).

Usage: /usr/bin/python3 tools/onnx/export_for_bench.py OUT_DIR [--batch 16] [--nets a,b] [--opset 13]
Needs torch and torchvision only (not the onnx package)."""
import argparse
import inspect
import os
import time

import torch
import torchvision

NETS = ("alexnet,resnet18,resnet50,convnext_small,vgg16,squeezenet1_0,googlenet,densenet161,"
        "inception_v3,shufflenet_v2_x1_0,mobilenet_v2,mobilenet_v3_large,mobilenet_v3_small,"
        "resnext50_32x4d,wide_resnet50_2,mnasnet1_0,efficientnet_b0,efficientnet_b4,regnet_y_400mf")

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("out_dir")
p.add_argument("--batch", type=int, default=16)
p.add_argument("--nets", default=NETS)
# 17: today's PyTorch writes scaled_dot_product_attention (vit_b_16, swin)
# only from opset 14, and LayerNormalization from 17.
p.add_argument("--opset", type=int, default=17)
a = p.parse_args()
os.makedirs(a.out_dir, exist_ok=True)
torch.manual_seed(0)
for name in a.nets.split(","):
    start = time.time()
    kwargs = dict(aux_logits=False, init_weights=True) if name in ("googlenet", "inception_v3") else {}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    x = torch.randn(a.batch, 3, 224, 224)
    # Newer PyTorch exports through torch.export by default, at opset 18 and
    # up: ask for the TorchScript exporter, which writes the opset asked for.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, x, os.path.join(a.out_dir, name + ".onnx"), opset_version=a.opset,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["input"], output_names=["output"], **legacy)
    print(f"{name}: {time.time() - start:.1f} s", flush=True)
