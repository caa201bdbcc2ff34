#!/usr/bin/python3
"""Draws a Caffe/dlcaffe net prototxt as a Graphviz graph, as Caffe's
draw_net.py does: layers are boxes with their name, type and key parameters
(kernel, stride, pad, num_output), blobs are grey octagons, and an in-place
layer (bottom = top, e.g. ReLU) is a green box with edges to and from its blob.

Usage: draw_net.py NET.prototxt OUT.png|svg|pdf|dot [--rankdir LR|TB|BT|RL]
           [--phase TRAIN|TEST|ALL] [--level N] [--stage S ...]

--phase keeps the layers whose include/exclude rules admit that phase (with
--level and --stage, as the Net does); ALL (the default) draws every layer.
.dot writes the graph text; other extensions are rendered by Graphviz `dot`.
"""
import argparse
import os
import shutil
import subprocess

from caffe_proto import load_caffe_pb2
from user_error import UserError, run_main

RENDERED_FORMATS = ("png", "svg", "pdf")
LAYER_COLORS = {"Convolution": "#FF5050", "Deconvolution": "#FF5050", "Pooling": "#FF9900",
                "InnerProduct": "#CC33FF"}
DEFAULT_LAYER_COLOR = "#6495ED"
IN_PLACE_LAYER_COLOR = "#90EE90"
BLOB_COLOR = "#E0E0E0"


def read_net(path, caffe_pb2):
    from google.protobuf import text_format
    try:
        with open(path) as f:
            text = f.read()
    except OSError as error:
        raise UserError("cannot read %s: %s" % (path, error.strerror))
    net = caffe_pb2.NetParameter()
    try:
        text_format.Merge(text, net)
    except text_format.ParseError as error:
        # The message starts with "line:column : "; name the file in front.
        line, column = error.GetLine(), error.GetColumn()
        message = str(error)
        if line is not None:
            message = message.split(" : ", 1)[-1]
            raise UserError("%s:%d:%d: %s" % (path, line, column, message))
        raise UserError("%s: %s" % (path, message))
    if not net.layer and net.layers:
        raise UserError("%s uses the old V1 'layers' format: upgrade it with "
                        "upgrade_net_proto_text first" % path)
    return net


def state_meets_rule(state, rule):
    """Caffe's NetStateRule test."""
    if rule.HasField("phase") and rule.phase != state["phase"]:
        return False
    if rule.HasField("min_level") and state["level"] < rule.min_level:
        return False
    if rule.HasField("max_level") and state["level"] > rule.max_level:
        return False
    return (all(s in state["stages"] for s in rule.stage) and
            not any(s in state["stages"] for s in rule.not_stage))


def layer_included(layer, state):
    """Whether the net built for `state` has `layer` (always, for state None)."""
    if layer.include and layer.exclude:
        raise UserError("layer '%s' has both include and exclude rules" % layer.name)
    if state is None:
        return True
    if layer.include:
        return any(state_meets_rule(state, rule) for rule in layer.include)
    return not any(state_meets_rule(state, rule) for rule in layer.exclude)


def spatial(values, h, w, default):
    """A kernel/stride/pad setting as text: 'k', 'HxW' or the default."""
    if h is not None and w is not None:
        return "%dx%d" % (h, w)
    values = list(values)
    if not values:
        return str(default)
    return "x".join(str(v) for v in values) if len(set(values)) > 1 else str(values[0])


def optional_field(message, name):
    return getattr(message, name) if message.HasField(name) else None


def key_params(layer):
    """The lines under a layer's name and type."""
    if layer.type in ("Convolution", "Deconvolution"):
        p = layer.convolution_param
        return ["num_output: %d" % p.num_output,
                "kernel size: " + spatial(p.kernel_size, optional_field(p, "kernel_h"),
                                          optional_field(p, "kernel_w"), "?"),
                "stride: " + spatial(p.stride, optional_field(p, "stride_h"),
                                     optional_field(p, "stride_w"), 1),
                "pad: " + spatial(p.pad, optional_field(p, "pad_h"),
                                  optional_field(p, "pad_w"), 0)]
    if layer.type == "Pooling":
        p = layer.pooling_param
        if p.global_pooling:
            return ["global"]
        kernel = [p.kernel_size] if p.HasField("kernel_size") else []
        return ["kernel size: " + spatial(kernel, optional_field(p, "kernel_h"),
                                          optional_field(p, "kernel_w"), "?"),
                "stride: " + spatial([p.stride], optional_field(p, "stride_h"),
                                     optional_field(p, "stride_w"), 1),
                "pad: " + spatial([p.pad], optional_field(p, "pad_h"),
                                  optional_field(p, "pad_w"), 0)]
    if layer.type == "InnerProduct":
        return ["num_output: %d" % layer.inner_product_param.num_output]
    return []


def layer_type_text(layer, caffe_pb2):
    if layer.type == "Pooling":
        pool = caffe_pb2.PoolingParameter.PoolMethod.Name(layer.pooling_param.pool)
        return "(%s Pooling)" % pool
    return "(%s)" % layer.type


def top_edge_label(layer):
    """Caffe's label on the edges from a layer to its tops."""
    if layer.type == "Data":
        return "Batch %d" % layer.data_param.batch_size
    if layer.type in ("Convolution", "Deconvolution"):
        return str(layer.convolution_param.num_output)
    if layer.type == "InnerProduct":
        return str(layer.inner_product_param.num_output)
    return ""


def quote(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def record_label(lines, separator):
    """A record-shaped node's label: the lines joined by `separator` (a DOT
    escape), with the characters records reserve escaped."""
    escaped = []
    for line in lines:
        for ch in '\\"{}|<>':
            line = line.replace(ch, "\\" + ch)
        escaped.append(line)
    return '"%s"' % separator.join(escaped)


def net_to_dot(net, caffe_pb2, rankdir, state, title):
    # Vertical graphs have room across, horizontal ones down (Caffe's choice).
    separator = " " if rankdir in ("TB", "BT") else "\\n"
    out = ["digraph %s {" % quote(net.name or "net"),
           "  rankdir=%s;" % rankdir,
           "  label=%s; labelloc=t;" % quote(title),
           '  node [fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=9];']
    blobs = []
    edges = []
    for index, layer in enumerate(net.layer):
        if not layer_included(layer, state):
            continue
        node = "layer_%d" % index
        in_place = len(layer.bottom) == 1 and list(layer.bottom) == list(layer.top)
        color = IN_PLACE_LAYER_COLOR if in_place else LAYER_COLORS.get(layer.type,
                                                                        DEFAULT_LAYER_COLOR)
        lines = [layer.name, layer_type_text(layer, caffe_pb2)] + key_params(layer)
        out.append('  %s [shape=record, style=filled, fillcolor="%s", label=%s];' % (
            node, color, record_label(lines, separator)))
        for bottom in layer.bottom:
            edges.append((quote("blob_" + bottom), node, ""))
            blobs.append(bottom)
        for top in layer.top:
            edges.append((node, quote("blob_" + top), top_edge_label(layer)))
            blobs.append(top)
    for blob in dict.fromkeys(blobs):  # each once, in first-use order
        out.append('  %s [shape=octagon, style=filled, fillcolor="%s", label=%s];' % (
            quote("blob_" + blob), BLOB_COLOR, quote(blob)))
    for source, target, label in edges:
        out.append("  %s -> %s%s;" % (source, target,
                                       " [label=%s]" % quote(label) if label else ""))
    out.append("}")
    return "\n".join(out) + "\n"


def render(dot_text, out_path, fmt):
    dot = shutil.which("dot")
    if not dot:
        raise UserError("Graphviz 'dot' not found: install graphviz (or write a .dot file)")
    result = subprocess.run([dot, "-T" + fmt, "-o", out_path], input=dot_text.encode(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0:
        raise UserError("dot could not write %s: %s" % (
            out_path, result.stderr.decode(errors="replace").strip()))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input_net_proto_file", help="net prototxt")
    parser.add_argument("output_image_file", help="picture (.png, .svg, .pdf) or .dot")
    parser.add_argument("--rankdir", default="LR", choices=("LR", "TB", "BT", "RL"),
                        help="direction of the graph (default: %(default)s)")
    parser.add_argument("--phase", default="ALL", choices=("TRAIN", "TEST", "ALL"),
                        help="draw the net of this phase (default: %(default)s)")
    parser.add_argument("--level", type=int, default=0, help="net state level for the rules")
    parser.add_argument("--stage", action="append", default=[],
                        help="net state stage for the rules (repeatable)")
    args = parser.parse_args()
    fmt = os.path.splitext(args.output_image_file)[1].lower().lstrip(".")
    if fmt not in RENDERED_FORMATS + ("dot",):
        raise UserError("%s: the output must end in .png, .svg, .pdf or .dot" %
                        args.output_image_file)
    caffe_pb2 = load_caffe_pb2()
    net = read_net(args.input_net_proto_file, caffe_pb2)
    state = None
    if args.phase != "ALL":
        state = {"phase": caffe_pb2.Phase.Value(args.phase), "level": args.level,
                 "stages": args.stage}
    title = "%s (%s)" % (net.name or os.path.basename(args.input_net_proto_file), args.phase)
    dot_text = net_to_dot(net, caffe_pb2, args.rankdir, state, title)
    if fmt == "dot":
        try:
            with open(args.output_image_file, "w") as f:
                f.write(dot_text)
        except OSError as error:
            raise UserError("cannot write %s: %s" % (args.output_image_file, error.strerror))
    else:
        render(dot_text, args.output_image_file, fmt)


if __name__ == "__main__":
    run_main(main)
