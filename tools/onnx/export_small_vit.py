#!/usr/bin/python3
"""Export a small vision transformer for 28x28 grey images (MNIST) to ONNX.

Usage:  /usr/bin/python3 tools/onnx/export_small_vit.py OUT.onnx [--batch N]
        [--opset N] [--seed S]

The model is torchvision's VisionTransformer (class token, learned position
embedding, pre-norm encoder blocks of nn.MultiheadAttention and a GELU MLP)
with a one-channel patch embedding: image 28, patch 7 (16 patches + the
class token), 2 layers, 4 heads, width 64, MLP 128, 10 classes. Random
weights (fixed seed), dropout 0. It is exported for training, as
`convert_onnx --training` and `dlcaffe train` expect: no constant folding,
so every parameter, the class token and the position embedding included,
stays an initializer under its PyTorch name ("class_token",
"encoder.pos_embedding"). The batch is fixed (default 64).
"""
import argparse
import inspect

import torch
import torchvision


def small_vit():
    vit = torchvision.models.VisionTransformer(
        image_size=28, patch_size=7, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
        num_classes=10, dropout=0.0, attention_dropout=0.0)
    vit.conv_proj = torch.nn.Conv2d(1, 64, kernel_size=7, stride=7)
    # torchvision starts the class token at zero; a random one shows that
    # training moves it from where it started, whatever the start.
    torch.nn.init.normal_(vit.class_token, std=0.02)
    return vit.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    model = small_vit()
    # PyTorch >= 2.5 defaults to the torch.export-based exporter; this
    # script asks for the TorchScript one, which keeps initializer names.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, torch.zeros(args.batch, 1, 28, 28), args.out,
                      opset_version=args.opset, training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, input_names=["data"], output_names=["logits"],
                      **legacy)


if __name__ == "__main__":
    main()
