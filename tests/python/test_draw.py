"""caffe.draw: the pydot graph of a NetParameter names every layer (with its
label) and blob, edges follow bottoms and tops with Caffe's labels, phase
filtering, PNG and SVG through Graphviz, and the same DOT text as
tools/extra/draw_net.py writes."""
import os
import re
import subprocess
import sys

import pytest
from google.protobuf import text_format

import caffe
import caffe.draw
from caffe.proto import caffe_pb2

from conftest import SOURCE_DIR

NET = """
name: "tiny"
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        data_param { source: "x" batch_size: 64 } }
layer { name: "mnist_test" type: "Data" top: "data" top: "label" include { phase: TEST }
        data_param { source: "y" batch_size: 100 } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 20 kernel_size: 5 } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "relu1" type: "ReLU" bottom: "pool1" top: "pool1" }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1"
        param { lr_mult: 1 } param { lr_mult: 2 } inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" }
layer { name: "accuracy" type: "Accuracy" bottom: "ip1" bottom: "label" top: "accuracy"
        include { phase: TEST } }
"""
BLOBS = ["data", "label", "conv1", "pool1", "ip1", "loss", "accuracy"]


def net_param(text=NET):
    return text_format.Parse(text, caffe_pb2.NetParameter())


def node_names(graph):
    return [node.get_name() for node in graph.get_nodes() if node.get_name() not in ("node",
                                                                                     "edge")]


def test_graph_has_every_layer_and_blob():
    net = net_param()
    graph = caffe.draw.get_pydot_graph(net, "LR")
    nodes = {node.get_name(): node for node in graph.get_nodes()}
    layer_labels = [nodes["layer_%d" % i].get("label") for i in range(len(net.layer))]
    assert layer_labels == [caffe.draw.get_layer_label(layer, "LR") for layer in net.layer]
    for layer, label in zip(net.layer, layer_labels):
        assert label.startswith('"%s\\n(' % layer.name)
    for blob in BLOBS:
        node = nodes['"blob_%s"' % blob]
        assert node.get("label") == '"%s"' % blob and node.get("shape") == "octagon"
    assert len(node_names(graph)) == len(net.layer) + len(BLOBS)
    edges = [(e.get_source(), e.get_destination(), e.get("label")) for e in graph.get_edges()]
    expected = []
    for i, layer in enumerate(net.layer):
        expected += [('"blob_%s"' % b, "layer_%d" % i) for b in layer.bottom]
        expected += [("layer_%d" % i, '"blob_%s"' % t) for t in layer.top]
    assert [e[:2] for e in edges] == expected
    assert ("layer_2", '"blob_conv1"', '"20"') in edges
    assert ("layer_0", '"blob_data"', '"Batch 64"') in edges
    assert ('"blob_conv1"', "layer_3", None) in edges
    # The in-place ReLU is green, the convolution red, the others their colours.
    assert nodes["layer_4"].get("fillcolor") == '"#90EE90"'
    assert nodes["layer_2"].get("fillcolor") == '"#FF5050"'
    assert nodes["layer_3"].get("fillcolor") == '"#FF9900"'
    assert nodes["layer_5"].get("fillcolor") == '"#CC33FF"'
    assert nodes["layer_6"].get("fillcolor") == '"#6495ED"'
    unlabelled = caffe.draw.get_pydot_graph(net, "LR", label_edges=False)
    assert all(e.get("label") is None for e in unlabelled.get_edges())


def test_labels_and_helpers():
    net = net_param()
    conv, pool, ip, loss = net.layer[2], net.layer[3], net.layer[5], net.layer[6]
    assert caffe.draw.get_layer_label(conv, "LR") == (
        '"conv1\\n(Convolution)\\nnum_output: 20\\nkernel size: 5\\nstride: 1\\npad: 0"')
    assert caffe.draw.get_layer_label(pool, "TB") == (
        '"pool1 (MAX Pooling) kernel size: 2 stride: 2 pad: 0"')
    assert caffe.draw.get_layer_label(ip, "BT", display_lrm=True) == (
        '"ip1 (InnerProduct) num_output: 10 lr mult: 1.00, 2.00"')
    assert caffe.draw.get_layer_label(loss, "RL") == '"loss\\n(SoftmaxWithLoss)"'
    assert caffe.draw.get_edge_label(net.layer[1]) == "Batch 100"
    assert caffe.draw.get_edge_label(conv) == "20"
    assert caffe.draw.get_edge_label(ip) == "10"
    assert caffe.draw.get_edge_label(loss) == '""'
    assert caffe.draw.get_layer_lr_mult(ip) == (1, 2)
    assert caffe.draw.get_layer_lr_mult(conv) == (1, 1)
    assert caffe.draw.choose_color_by_layertype("Deconvolution") == "#FF5050"
    assert caffe.draw.choose_color_by_layertype("Sigmoid") == "#6495ED"
    assert caffe.draw.get_pooling_types_dict() == {0: "MAX", 1: "AVE", 2: "STOCHASTIC"}
    # Characters that records reserve are escaped.
    odd = caffe_pb2.LayerParameter(name="a|b{c}", type="ReLU")
    assert caffe.draw.get_layer_label(odd, "LR") == '"a\\|b\\{c\\}\\n(ReLU)"'


def test_phase_keeps_the_layers_of_that_phase():
    net = net_param()
    def layer_nodes(graph):
        return sorted(n.get("label").split("\\n")[0].strip('"') for n in graph.get_nodes()
                      if n.get_name().startswith("layer_"))
    train = caffe.draw.get_pydot_graph(net, "LR", phase=caffe.TRAIN)
    test = caffe.draw.get_pydot_graph(net, "LR", phase=caffe.TEST)
    assert layer_nodes(train) == ["conv1", "ip1", "loss", "mnist", "pool1", "relu1"]
    assert layer_nodes(test) == ["accuracy", "conv1", "ip1", "loss", "mnist_test", "pool1",
                                 "relu1"]
    assert len(layer_nodes(caffe.draw.get_pydot_graph(net, "LR"))) == len(net.layer)
    staged = net_param('layer { name: "d" type: "ReLU" bottom: "x" top: "x" '
                       'include { phase: TEST stage: "deploy" } }')
    assert layer_nodes(caffe.draw.get_pydot_graph(staged, "LR", phase=caffe.TEST)) == []
    assert layer_nodes(caffe.draw.get_pydot_graph(staged, "LR", phase=caffe.TEST,
                                                  stages=["deploy"])) == ["d"]
    both = net_param('layer { name: "r" type: "ReLU" bottom: "x" top: "x" '
                     'include { phase: TRAIN } exclude { phase: TEST } }')
    with pytest.raises(ValueError, match="'r'"):
        caffe.draw.get_pydot_graph(both, "LR", phase=caffe.TRAIN)


def test_png_and_svg(tmp_path):
    net = net_param()
    png = caffe.draw.draw_net(net, "LR")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > height  # LR draws a wide graph
    svg_path = str(tmp_path / "net.svg")
    caffe.draw.draw_net_to_file(net, svg_path, "TB", phase=caffe.TEST)
    svg = open(svg_path).read()
    assert "<svg" in svg
    for name in ["conv1", "mnist_test", "accuracy"] + BLOBS:
        assert ">%s" % name in svg, name
    assert "mnist<" not in svg and ">mnist " not in svg  # the TRAIN data layer is left out


def test_same_graph_as_draw_net_tool(tmp_path):
    prototxt = tmp_path / "tiny.prototxt"
    prototxt.write_text(NET)
    out = tmp_path / "tiny.dot"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "extra", "draw_net.py"),
                    str(prototxt), str(out), "--phase", "TEST"], check=True, env=env)
    tool_dot = out.read_text()
    state = caffe.draw.net_state(caffe.TEST)
    assert tool_dot == caffe.draw.net_to_dot(net_param(), "LR", state, "tiny (TEST)")
    # The pydot graph has the same nodes and edges as the tool's text.
    graph = caffe.draw.get_pydot_graph(net_param(), "LR", phase=caffe.TEST)
    for node in node_names(graph):
        assert re.search(r"^  %s \[" % re.escape(node), tool_dot, re.M), node
    for edge in graph.get_edges():
        assert "  %s -> %s" % (edge.get_source(), edge.get_destination()) in tool_dot
