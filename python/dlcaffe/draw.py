"""pycaffe's caffe.draw: a caffe_pb2.NetParameter drawn as a Graphviz graph.

Layers are boxes (records) with their name, type and key parameters
(num_output, kernel, stride, pad), coloured by type; blobs are grey
octagons; an in-place layer (one bottom that is also its top, e.g. ReLU)
is a green box with edges from and back to its blob. Edges from a layer to
its tops carry Caffe's labels (the batch size of a Data layer, num_output).

tools/extra/draw_net.py draws with the same functions (net_to_dot); pycaffe's
get_pydot_graph / draw_net / draw_net_to_file build the same graph with
pydot and render it with Graphviz `dot`.

`phase` keeps the layers whose include/exclude rules admit that phase, with
the net state's `level` and `stages` as the Net applies them (Caffe's
NetStateRule); phase None draws every layer.
"""
from collections import OrderedDict

__all__ = ["LAYER_STYLE_DEFAULT", "NEURON_LAYER_STYLE", "BLOB_STYLE", "get_pooling_types_dict",
           "get_edge_label", "get_layer_lr_mult", "get_layer_label", "choose_color_by_layertype",
           "net_state", "state_meets_rule", "layer_included", "net_to_dot", "get_pydot_graph",
           "draw_net", "draw_net_to_file"]

LAYER_COLORS = {"Convolution": "#FF5050", "Deconvolution": "#FF5050", "Pooling": "#FF9900",
                "InnerProduct": "#CC33FF"}
DEFAULT_LAYER_COLOR = "#6495ED"
IN_PLACE_LAYER_COLOR = "#90EE90"
BLOB_COLOR = "#E0E0E0"

# pycaffe's style dicts (fillcolor of LAYER_STYLE_DEFAULT is the default;
# choose_color_by_layertype gives a layer's own).
LAYER_STYLE_DEFAULT = {"shape": "record", "fillcolor": DEFAULT_LAYER_COLOR, "style": "filled"}
NEURON_LAYER_STYLE = {"shape": "record", "fillcolor": IN_PLACE_LAYER_COLOR, "style": "filled"}
BLOB_STYLE = {"shape": "octagon", "fillcolor": BLOB_COLOR, "style": "filled"}

_GRAPH_NODE_DEFAULTS = (("fontname", '"Helvetica"'), ("fontsize", "10"))
_GRAPH_EDGE_DEFAULTS = (("fontname", '"Helvetica"'), ("fontsize", "9"))


# ---- labels and colours ----

def _pool_method_name(pooling_param):
    """The name of the pooling method (MAX, AVE, ...) from the message's own
    schema, so that any caffe_pb2 (the package's or a script's) works."""
    enum = pooling_param.DESCRIPTOR.fields_by_name["pool"].enum_type
    value = enum.values_by_number.get(pooling_param.pool)
    return value.name if value is not None else str(pooling_param.pool)


def get_pooling_types_dict():
    """{pooling method number: name}, e.g. {0: 'MAX', 1: 'AVE', ...}."""
    from .proto import caffe_pb2
    return {value: name for name, value in caffe_pb2.PoolingParameter.PoolMethod.items()}


def get_edge_label(layer):
    """pycaffe's label of the edges from a layer to its tops: 'Batch N' for
    a Data layer, num_output for Convolution, Deconvolution and
    InnerProduct, else '""' (an empty label)."""
    if layer.type == "Data":
        return "Batch %d" % layer.data_param.batch_size
    if layer.type in ("Convolution", "Deconvolution"):
        return str(layer.convolution_param.num_output)
    if layer.type == "InnerProduct":
        return str(layer.inner_product_param.num_output)
    return '""'


def get_layer_lr_mult(layer):
    """(weight lr_mult, bias lr_mult) of a Convolution, Deconvolution or
    InnerProduct layer (1 where the layer gives no ParamSpec, Caffe's
    default); (0, 0) for other layer types."""
    if layer.type not in ("Convolution", "Deconvolution", "InnerProduct"):
        return 0, 0
    weight = layer.param[0].lr_mult if len(layer.param) > 0 else 1
    bias = layer.param[1].lr_mult if len(layer.param) > 1 else 1
    return weight, bias


def _spatial(values, h, w, default):
    """A kernel/stride/pad setting as text: 'k', 'HxW' or the default."""
    if h is not None and w is not None:
        return "%dx%d" % (h, w)
    values = list(values)
    if not values:
        return str(default)
    return "x".join(str(v) for v in values) if len(set(values)) > 1 else str(values[0])


def _optional(message, name):
    return getattr(message, name) if message.HasField(name) else None


def _key_params(layer):
    """The lines under a layer's name and type."""
    if layer.type in ("Convolution", "Deconvolution"):
        p = layer.convolution_param
        return ["num_output: %d" % p.num_output,
                "kernel size: " + _spatial(p.kernel_size, _optional(p, "kernel_h"),
                                           _optional(p, "kernel_w"), "?"),
                "stride: " + _spatial(p.stride, _optional(p, "stride_h"),
                                      _optional(p, "stride_w"), 1),
                "pad: " + _spatial(p.pad, _optional(p, "pad_h"), _optional(p, "pad_w"), 0)]
    if layer.type == "Pooling":
        p = layer.pooling_param
        if p.global_pooling:
            return ["global"]
        kernel = [p.kernel_size] if p.HasField("kernel_size") else []
        return ["kernel size: " + _spatial(kernel, _optional(p, "kernel_h"),
                                           _optional(p, "kernel_w"), "?"),
                "stride: " + _spatial([p.stride], _optional(p, "stride_h"),
                                      _optional(p, "stride_w"), 1),
                "pad: " + _spatial([p.pad], _optional(p, "pad_h"), _optional(p, "pad_w"), 0)]
    if layer.type == "InnerProduct":
        return ["num_output: %d" % layer.inner_product_param.num_output]
    return []


def _layer_type_text(layer):
    if layer.type == "Pooling":
        return "(%s Pooling)" % _pool_method_name(layer.pooling_param)
    return "(%s)" % layer.type


def _quote(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def _record_label(lines, separator):
    """A record-shaped node's label: the lines joined by `separator` (a DOT
    escape), with the characters records reserve escaped; quoted."""
    escaped = []
    for line in lines:
        for ch in '\\"{}|<>':
            line = line.replace(ch, "\\" + ch)
        escaped.append(line)
    return '"%s"' % separator.join(escaped)


def _separator(rankdir):
    # Vertical graphs have room across, horizontal ones down (Caffe's choice).
    return " " if rankdir in ("TB", "BT") else "\\n"


def get_layer_label(layer, rankdir, display_lrm=False):
    """A layer's node label, in double quotes as DOT takes it: name, type
    (with the method for Pooling) and key parameters, one per line for a
    horizontal graph (rankdir LR/RL), separated by spaces for a vertical one
    (TB/BT); with display_lrm the learning rate multipliers of layers that
    learn."""
    lines = [layer.name, _layer_type_text(layer)] + _key_params(layer)
    if display_lrm and layer.type in ("Convolution", "Deconvolution", "InnerProduct"):
        weight, bias = get_layer_lr_mult(layer)
        lines.append("lr mult: %.2f, %.2f" % (weight, bias))
    return _record_label(lines, _separator(rankdir))


def choose_color_by_layertype(layertype):
    """The fill colour of a (not in-place) layer of the given type."""
    return LAYER_COLORS.get(layertype, DEFAULT_LAYER_COLOR)


# ---- which layers a net state keeps ----

def net_state(phase, level=0, stages=()):
    """The net state the include/exclude rules are tested against: phase a
    number (caffe.TRAIN, caffe.TEST) or name ('TRAIN', 'TEST')."""
    if isinstance(phase, str):
        phase = {"TRAIN": 0, "TEST": 1}[phase.upper()]
    return {"phase": int(phase), "level": int(level), "stages": list(stages or ())}


def state_meets_rule(state, rule):
    """Caffe's NetStateRule test of a net state (net_state's dict)."""
    if rule.HasField("phase") and rule.phase != state["phase"]:
        return False
    if rule.HasField("min_level") and state["level"] < rule.min_level:
        return False
    if rule.HasField("max_level") and state["level"] > rule.max_level:
        return False
    return (all(s in state["stages"] for s in rule.stage) and
            not any(s in state["stages"] for s in rule.not_stage))


def layer_included(layer, state):
    """Whether the net built for `state` has `layer` (always, for state None).
    Raises ValueError for a layer with both include and exclude rules."""
    if layer.include and layer.exclude:
        raise ValueError("layer '%s' has both include and exclude rules" % layer.name)
    if state is None:
        return True
    if layer.include:
        return any(state_meets_rule(state, rule) for rule in layer.include)
    return not any(state_meets_rule(state, rule) for rule in layer.exclude)


# ---- the graph ----

def _graph_elements(caffe_net, rankdir, label_edges=True, state=None, display_lrm=False):
    """The graph's nodes (OrderedDict of DOT id -> list of (attribute, DOT
    value)): the layers in order, then the blobs in first-use order; and
    its edges, (source id, target id, DOT label or None)."""
    layer_nodes = OrderedDict()
    blobs = []
    edges = []
    for index, layer in enumerate(caffe_net.layer):
        if not layer_included(layer, state):
            continue
        node = "layer_%d" % index
        in_place = len(layer.bottom) == 1 and list(layer.bottom) == list(layer.top)
        style = NEURON_LAYER_STYLE if in_place else LAYER_STYLE_DEFAULT
        color = style["fillcolor"] if in_place else choose_color_by_layertype(layer.type)
        layer_nodes[node] = [("shape", style["shape"]), ("style", style["style"]),
                             ("fillcolor", _quote(color)),
                             ("label", get_layer_label(layer, rankdir, display_lrm))]
        for bottom in layer.bottom:
            edges.append((_quote("blob_" + bottom), node, None))
            blobs.append(bottom)
        top_label = get_edge_label(layer) if label_edges else '""'
        for top in layer.top:
            edges.append((node, _quote("blob_" + top),
                          None if top_label == '""' else _quote(top_label)))
            blobs.append(top)
    nodes = layer_nodes
    for blob in dict.fromkeys(blobs):  # each once, in first-use order
        nodes[_quote("blob_" + blob)] = [
            ("shape", BLOB_STYLE["shape"]), ("style", BLOB_STYLE["style"]),
            ("fillcolor", _quote(BLOB_STYLE["fillcolor"])), ("label", _quote(blob))]
    return nodes, edges


def net_to_dot(caffe_net, rankdir="LR", state=None, title=None, label_edges=True,
               display_lrm=False):
    """The DOT text of the graph (what tools/extra/draw_net.py writes):
    `state` a net_state() dict or None for every layer, `title` a label at
    the top of the graph."""
    out = ["digraph %s {" % _quote(caffe_net.name or "net"), "  rankdir=%s;" % rankdir]
    if title is not None:
        out.append("  label=%s; labelloc=t;" % _quote(title))
    out.append("  node [%s];" % ", ".join("%s=%s" % kv for kv in _GRAPH_NODE_DEFAULTS))
    out.append("  edge [%s];" % ", ".join("%s=%s" % kv for kv in _GRAPH_EDGE_DEFAULTS))
    nodes, edges = _graph_elements(caffe_net, rankdir, label_edges, state, display_lrm)
    for node, attributes in nodes.items():
        out.append("  %s [%s];" % (node, ", ".join("%s=%s" % kv for kv in attributes)))
    for source, target, label in edges:
        out.append("  %s -> %s%s;" % (source, target,
                                       " [label=%s]" % label if label is not None else ""))
    out.append("}")
    return "\n".join(out) + "\n"


def get_pydot_graph(caffe_net, rankdir, label_edges=True, phase=None, display_lrm=False,
                    level=0, stages=None):
    """The net as a pydot.Dot graph (rankdir 'LR', 'TB', 'BT' or 'RL'):
    label_edges=False leaves the edges unlabelled; phase (caffe.TRAIN,
    caffe.TEST) keeps the layers the Net of that phase (and level, stages)
    has, None every layer. Raises ValueError for a layer with both include
    and exclude rules."""
    import pydot
    state = None if phase is None else net_state(phase, level, stages)
    graph = pydot.Dot(_quote(caffe_net.name or "Net"), graph_type="digraph", rankdir=rankdir)
    graph.set_node_defaults(**dict(_GRAPH_NODE_DEFAULTS))
    graph.set_edge_defaults(**dict(_GRAPH_EDGE_DEFAULTS))
    nodes, edges = _graph_elements(caffe_net, rankdir, label_edges, state, display_lrm)
    pydot_nodes = {}
    for name, attributes in nodes.items():
        pydot_nodes[name] = pydot.Node(name, **dict(attributes))
        graph.add_node(pydot_nodes[name])
    for source, target, label in edges:
        extra = {} if label is None else {"label": label}
        graph.add_edge(pydot.Edge(pydot_nodes[source], pydot_nodes[target], **extra))
    return graph


def draw_net(caffe_net, rankdir, ext="png", phase=None, display_lrm=False, level=0,
             stages=None):
    """The net drawn by Graphviz `dot` in format `ext` ('png', 'svg', 'pdf',
    'dot', ...), as bytes."""
    graph = get_pydot_graph(caffe_net, rankdir, phase=phase, display_lrm=display_lrm,
                            level=level, stages=stages)
    return graph.create(format=ext)


def draw_net_to_file(caffe_net, filename, rankdir="LR", phase=None, display_lrm=False,
                     level=0, stages=None):
    """Draws the net into `filename`, in the format its extension names."""
    ext = filename[filename.rfind(".") + 1:]
    image = draw_net(caffe_net, rankdir, ext, phase, display_lrm, level, stages)
    with open(filename, "wb") as f:
        f.write(image)
