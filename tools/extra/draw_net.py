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
import importlib.util
import os
import shutil
import subprocess

from caffe_proto import load_caffe_pb2
from user_error import UserError, run_main

RENDERED_FORMATS = ("png", "svg", "pdf")


def load_draw():
    """The drawing functions, python/dlcaffe/draw.py (pycaffe's caffe.draw),
    loaded from its file: from this source tree, else from where the dlcaffe
    package is installed. The package itself is not imported, so drawing
    needs neither its compiled extension nor pydot."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "..", "..", "python", "dlcaffe", "draw.py")]
    try:
        spec = importlib.util.find_spec("dlcaffe")  # finds it without running it
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidates += [os.path.join(folder, "draw.py")
                       for folder in spec.submodule_search_locations]
    for path in candidates:
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("dlcaffe_draw", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise UserError("cannot find dlcaffe's draw.py (looked in %s)" % ", ".join(
        os.path.normpath(c) for c in candidates))


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
    draw = load_draw()
    try:
        dot_text = draw.net_to_dot(net, args.rankdir, state, title)
    except ValueError as error:  # a layer with both include and exclude rules
        raise UserError(str(error))
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
