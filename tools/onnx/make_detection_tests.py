#!/usr/bin/python3
"""Write ONNX backend-style test directories for torchvision's detectors.

Usage:

    /usr/bin/python3 tools/onnx/make_detection_tests.py OUT_DIR \
        [--nets ssdlite320_mobilenet_v3_large,...] [--small] [--opset 17] \
        [--exporter torchscript|dynamo]

writes OUT_DIR/<net>/ for each net (default: all of NETS) and prints one
line per net: the detections PyTorch found and the time the export took.
ssdlite320_mobilenet_v3_large_nothing_found is ssdlite with a score
threshold no score reaches: every data-dependent size is 0 there.

    --small     a smaller input image (CI): 96 x 128 instead of 240 x 320.
                (ssdlite resizes every image to 320 x 320; the two R-CNN
                style nets resize to their min_size, set small too.)
    --exporter  torchscript (torch.onnx.export, the default; Debian's 1.13
                has it) or dynamo (torch.onnx.export(..., dynamo=True),
                torch.export: PyTorch 2.x only). torch.export cannot take
                torchvision's batched_nms (it branches on the box count):
                the export swaps in its traced form
                (export_friendly_batched_nms); the references are the
                unchanged model's.

Layout of OUT_DIR/<net>/:

    model.onnx            the detector in eval mode, random weights (below)
    test_data_set_0/
        input_0.pb        the image, 3 x H x W in [0, 1], named as the input
        output_K.pb       boxes D x 4 (x1, y1, x2, y2 in the image's pixels),
                          scores D and labels D (as floats), in the order
                          of the net's result dict
        tolerances.json   relative L2 bounds per file (1e-4)

The references are PyTorch's eager results on the CPU in float64 (the
model copied with .double(), torch.no_grad, eval); the ONNX file is written
from the float32 model, as users export it. Each file's bound is
max(1e-4, 4 d), d the relative L2 distance of PyTorch's own float32 result
from that reference (the deep random nets amplify rounding: about 1e-4 on
ssdlite's scores). Labels and the order of the rows are exact decisions
(sorting, thresholds, non-maximum suppression): float32 and float64 must
agree on them, or the net is re-seeded.

Weights.  Random (fixed seed), as torchvision initializes them, with
BatchNorm statistics measured on two random images (see calibrate): at
torchvision's init every class would score alike. The order of the
detections is a decision on the scores, so the script checks that the kept
scores fall by more than 1e-4 relative from one row to the next (more than
two implementations' rounding) and re-seeds the net until they do.
"""
import argparse
import copy
import inspect
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision
from onnx import numpy_helper

NETS = ["ssdlite320_mobilenet_v3_large", "retinanet_resnet50_fpn",
        "fasterrcnn_mobilenet_v3_large_320_fpn"]
# A net that finds nothing (no score reaches its threshold): every class's
# NonZero is empty and the If takes its "no boxes" branch.
NOTHING_FOUND = "ssdlite320_mobilenet_v3_large_nothing_found"
HEAD_SCALE = 30.0

# Post-processing settings kept small for a test: fewer candidates per
# class, fewer detections (torchvision's keyword arguments of each net).
SETTINGS = {
    "ssdlite320_mobilenet_v3_large": dict(topk_candidates=100, detections_per_img=50,
                                          score_thresh=0.01),
    "retinanet_resnet50_fpn": dict(topk_candidates=100, detections_per_img=50,
                                   score_thresh=0.05),
    "fasterrcnn_mobilenet_v3_large_320_fpn": dict(box_detections_per_img=50,
                                                  box_score_thresh=0.05),
}


def build(net, seed, small):
    torch.manual_seed(seed)
    if net == NOTHING_FOUND:
        kwargs = dict(SETTINGS["ssdlite320_mobilenet_v3_large"], score_thresh=1.01)
        net = "ssdlite320_mobilenet_v3_large"
    else:
        kwargs = dict(SETTINGS[net])
    kwargs.update(weights=None, weights_backbone=None)
    if net != "ssdlite320_mobilenet_v3_large":
        size = 128 if small else 320
        kwargs.update(min_size=size, max_size=size)
    model = getattr(torchvision.models.detection, net)(**kwargs).eval()
    calibrate(model, [torch.rand(3, 96, 128, generator=torch.Generator().manual_seed(seed + 100))
                      for _ in range(2)])
    if net == "retinanet_resnet50_fpn":
        # Its logits start at the prior (sigmoid 0.01) with a spread too
        # small to order the scores: widen the last classification layer.
        with torch.no_grad():
            model.head.classification_head.cls_logits.weight.mul_(HEAD_SCALE)
    return model


def calibrate(model, images):
    """BatchNorm statistics from the activations of `images`: at
    torchvision's init (running mean 0, variance 1) the activations shrink
    by orders of magnitude per block and every detector scores every class
    alike."""
    def pre_hook(mod, inputs):
        x = inputs[0]
        dims = [d for d in range(x.dim()) if d != 1]
        var = x.var(dim=dims, unbiased=False)
        mod.running_mean.copy_(x.mean(dim=dims))
        mod.running_var.copy_(var.clamp_min(1e-4 * var.mean().item() + 1e-12))

    hooks = [m.register_forward_pre_hook(pre_hook) for m in model.modules()
             if isinstance(m, torch.nn.BatchNorm2d)]
    with torch.no_grad():
        model(images)
    for h in hooks:
        h.remove()


def export_friendly_batched_nms(boxes, scores, idxs, iou_threshold):
    """torchvision's batched_nms as its traced form exports it (one NMS over
    boxes moved apart per class), without the Python branches on the box
    count that torch.export cannot take (GuardOnDataDependentSymNode in
    torchvision 0.26). The same boxes: the coordinates are clipped to the
    image, so the 0 added to the maximum changes nothing."""
    max_coordinate = torch.cat([boxes.flatten(), boxes.new_zeros(1)]).max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    return torchvision.ops.nms(boxes + offsets[:, None], scores, iou_threshold)


def write_tensor(path, array, name):
    tensor = numpy_helper.from_array(np.ascontiguousarray(array).astype(np.float32), name=name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def separated(scores):
    """The kept scores fall by more than 1e-4 relative from row to row."""
    s = scores.numpy()
    return bool(np.all(s[:-1] - s[1:] > 1e-4 * np.abs(s[:-1])))


def generate(net, out_dir, small, opset, exporter):
    h, w = (96, 128) if small else (240, 320)
    gen = torch.Generator().manual_seed(7)
    image = torch.rand(3, h, w, generator=gen)
    for seed in range(20):
        model = build(net, seed, small)
        with torch.no_grad():
            found32 = model([image])[0]
            found = copy.deepcopy(model).double()([image.double()])[0]
        # The same decisions in float32 and float64, with room to spare.
        if net == NOTHING_FOUND and len(found32["scores"]) == 0:
            break
        if (len(found["scores"]) >= 2 and separated(found["scores"]) and
                torch.equal(found["labels"], found32["labels"])):
            break
    else:
        sys.exit(f"{net}: no seed of 20 gives well separated scores")
    # The outputs in the order the exporter flattens the result dict
    # (Faster R-CNN's is boxes, labels, scores).
    keys = list(found32.keys())
    bounds = {}
    for k, key in enumerate(keys):
        ref = found[key].double()
        d32 = ((found32[key].double() - ref).norm() / max(ref.norm().item(), 1e-30)).item() \
            if ref.numel() else 0.0
        bounds[f"output_{k}.pb"] = max(1e-4, 4 * d32)
    d = os.path.join(out_dir, net)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    start = time.time()
    path = os.path.join(d, "model.onnx")
    # PyTorch 2.9 made torch.export the default: ask for each by name where
    # the argument exists (Debian's 1.13 has only the TorchScript exporter).
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if exporter == "dynamo":
        from torchvision.ops import boxes as box_ops
        original = box_ops.batched_nms
        box_ops.batched_nms = export_friendly_batched_nms
        try:
            # At least opset 18, torch.export's own: onnx's converter down
            # to 17 fails on its Reduce ops (axes as inputs).
            torch.onnx.export(model, ([image],), path, opset_version=max(opset, 18), dynamo=True,
                              input_names=["image"], output_names=keys)
        finally:
            box_ops.batched_nms = original
    else:
        torch.onnx.export(model, ([image],), path, opset_version=opset,
                          input_names=["image"], output_names=keys,
                          **({"dynamo": False} if has_dynamo else {}))
    import onnx
    g = onnx.load(path).graph
    inputs = [i.name for i in g.input if i.name not in {t.name for t in g.initializer}]
    outputs = [o.name for o in g.output]
    t = os.path.join(d, "test_data_set_0")
    write_tensor(os.path.join(t, "input_0.pb"), image.numpy(), inputs[0])
    for k, key in enumerate(keys):
        write_tensor(os.path.join(t, f"output_{k}.pb"), found[key].numpy(), outputs[k])
    with open(os.path.join(t, "tolerances.json"), "w") as f:
        json.dump(bounds, f, indent=1, sort_keys=True)
    print(f"{net}: {len(found['scores'])} detections (seed {seed}), exported in "
          f"{time.time() - start:.1f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for net in args.nets.split(","):
        if net not in NETS + [NOTHING_FOUND]:
            sys.exit(f"unknown net '{net}' (known: {', '.join(NETS + [NOTHING_FOUND])})")
        generate(net, args.out_dir, args.small, args.opset, args.exporter)


if __name__ == "__main__":
    main()
