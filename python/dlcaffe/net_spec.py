"""pycaffe's NetSpec: nets written as Python expressions.

    from caffe import layers as L, params as P
    n = caffe.NetSpec()
    n.data, n.label = L.Data(source='train_lmdb', backend=P.Data.LMDB, batch_size=64, ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20,
                            weight_filler=dict(type='xavier'))
    n.relu1 = L.ReLU(n.conv1, in_place=True)
    net_param = n.to_proto()            # a caffe_pb2.NetParameter

`L.<Type>(*bottoms, **params)` makes a layer of that type: each bottom is a
Top (the result of another layer), and a keyword argument sets a field of
the layer's `<type>_param` message when it has one of that name (e.g.
num_output of convolution_param), else the field of LayerParameter itself
(name, loss_weight, include, propagate_down, ...); a keyword ending in
`param` (param, transform_param, ...) always names a LayerParameter field.
Values may be dicts (nested messages) and lists (repeated fields). Two
keywords are NetSpec's own: `ntop` (number of tops, 1 by default; 0 gives a
layer with no top, returned as the Function) and `in_place=True` (the tops
are the bottoms). Deconvolution and Im2col keywords go to convolution_param.
`P.<Type>.<ENUM>` is an enum value of the
`<Type>Parameter` message, e.g. P.Pooling.MAX.

Tops are named after the NetSpec attributes they are assigned to; a top not
assigned gets its layer type and a counter (Convolution1, Convolution2, ...),
and a layer is named after its first top.
"""
from collections import Counter, OrderedDict

from .proto import caffe_pb2

__all__ = ["Top", "Function", "NetSpec", "Layers", "Parameters", "layers", "params",
           "to_proto", "param_name_dict", "assign_proto"]


def param_name_dict():
    """Layer type -> the prefix of its parameter field in LayerParameter,
    from the message types: e.g. 'Convolution' -> 'convolution' (the field
    convolution_param is a ConvolutionParameter)."""
    names = {}
    for field in caffe_pb2.LayerParameter.DESCRIPTOR.fields:
        if not field.name.endswith("_param") or field.message_type is None:
            continue
        type_name = field.message_type.name
        if type_name.endswith("Parameter"):
            names[type_name[:-len("Parameter")]] = field.name[:-len("_param")]
    return names


_param_names = param_name_dict()
# Layer types that read another type's parameter message (pycaffe needs
# convolution_param=dict(...) for these; plain keywords work here too).
_param_names.setdefault("Deconvolution", "convolution")
_param_names.setdefault("Im2col", "convolution")


def _is_repeated(message, name):
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise AttributeError("%s has no field '%s'" % (message.DESCRIPTOR.name, name))
    return field.label == field.LABEL_REPEATED


def assign_proto(proto, name, val):
    """Sets field `name` of the message `proto` from a Python value: a dict
    fills a nested message field by field, a list fills a repeated field
    (dicts in it add messages), and a single value given for a repeated
    field becomes a list of one. Raises AttributeError for an unknown field."""
    repeated = _is_repeated(proto, name)
    if repeated and not isinstance(val, (list, tuple)):
        val = [val]
    if repeated:
        field = getattr(proto, name)
        for item in val:
            if isinstance(item, dict):
                message = field.add()
                for key, value in item.items():
                    assign_proto(message, key, value)
            else:
                field.append(item)
    elif isinstance(val, dict):
        message = getattr(proto, name)
        message.SetInParent()  # an empty dict still sets the message
        for key, value in val.items():
            assign_proto(message, key, value)
    else:
        setattr(proto, name, val)


class Top:
    """One output of a Function (a layer): `fn` the layer, `n` its index
    among the layer's tops. Used as the bottom of other layers."""

    def __init__(self, fn, n):
        self.fn = fn
        self.n = n

    def to_proto(self):
        """The NetParameter of this top and every layer it depends on."""
        return to_proto(self)

    def _to_proto(self, layers, names, autonames):
        return self.fn._to_proto(layers, names, autonames)


class Function:
    """A layer of type `type_name` on the bottoms `inputs` (Tops), with
    `params` the keyword arguments it was made with (ntop and in_place
    taken out into .ntop and .in_place). .tops are its Tops."""

    def __init__(self, type_name, inputs, params):
        self.type_name = type_name
        for index, bottom in enumerate(inputs):
            if not isinstance(bottom, Top):
                raise TypeError("%s input %d is not a Top (type is %s)"
                                % (type_name, index, type(bottom)))
        self.inputs = inputs
        self.params = params
        self.ntop = self.params.pop("ntop", 1)
        self.in_place = self.params.pop("in_place", False)
        self.tops = tuple(Top(self, n) for n in range(self.ntop))

    def _get_name(self, names, autonames):
        """The layer's name: the name given for the layer (ntop=0 layers
        assigned to a NetSpec), else its first top's name, else automatic."""
        if self not in names:
            if self.ntop > 0:
                names[self] = self._get_top_name(self.tops[0], names, autonames)
            else:
                autonames[self.type_name] += 1
                names[self] = self.type_name + str(autonames[self.type_name])
        return names[self]

    def _get_top_name(self, top, names, autonames):
        """A top's name: its NetSpec attribute name, else the layer type and
        the next counter of that type."""
        if top not in names:
            autonames[top.fn.type_name] += 1
            names[top] = top.fn.type_name + str(autonames[top.fn.type_name])
        return names[top]

    def _to_proto(self, layers, names, autonames):
        """Adds this layer's LayerParameter to `layers` (an OrderedDict of
        Function -> LayerParameter), after the layers of its bottoms."""
        if self in layers:
            return
        bottoms = []
        for bottom in self.inputs:
            bottom._to_proto(layers, names, autonames)
            bottoms.append(layers[bottom.fn].top[bottom.n])
        layer = caffe_pb2.LayerParameter()
        layer.type = self.type_name
        layer.bottom.extend(bottoms)
        if self.in_place:
            layer.top.extend(layer.bottom)
        else:
            layer.top.extend(self._get_top_name(top, names, autonames) for top in self.tops)
        layer.name = self._get_name(names, autonames)
        type_param = _param_names.get(self.type_name)
        for key, value in self.params.items():
            if key.endswith("param"):  # param, transform_param, loss_param, ...
                assign_proto(layer, key, value)
                continue
            if type_param is not None:
                message = getattr(layer, type_param + "_param")
                if key in message.DESCRIPTOR.fields_by_name:
                    assign_proto(message, key, value)
                    continue
            assign_proto(layer, key, value)
        layers[self] = layer


class NetSpec:
    """A net under construction: assign Tops as attributes (or items),
    n.conv1 = L.Convolution(n.data, ...), and to_proto() writes the
    NetParameter with the tops named after the attributes."""

    def __init__(self):
        super().__setattr__("tops", OrderedDict())

    def __setattr__(self, name, value):
        self.tops[name] = value

    def __getattr__(self, name):
        try:
            return self.tops[name]
        except KeyError:
            raise AttributeError("the NetSpec has no top '%s'" % name) from None

    def __setitem__(self, key, value):
        self.__setattr__(key, value)

    def __getitem__(self, item):
        return self.tops[item]

    def __delitem__(self, name):
        del self.tops[name]

    def keys(self):
        """The names assigned so far, in order."""
        return list(self.tops.keys())

    def vals(self):
        """The Tops assigned so far, in order."""
        return list(self.tops.values())

    def to_proto(self):
        """A caffe_pb2.NetParameter of every layer the assigned tops need,
        each after the layers of its bottoms."""
        names = {top: name for name, top in self.tops.items()}
        autonames = Counter()
        layers = OrderedDict()
        for top in self.tops.values():
            top._to_proto(layers, names, autonames)
        net = caffe_pb2.NetParameter()
        net.layer.extend(layers.values())
        return net


def to_proto(*tops):
    """A caffe_pb2.NetParameter of the layers the given Tops need (names
    are automatic: type and counter)."""
    layers = OrderedDict()
    autonames = Counter()
    for top in tops:
        top.fn._to_proto(layers, {}, autonames)
    net = caffe_pb2.NetParameter()
    net.layer.extend(layers.values())
    return net


class Layers:
    """L.<Type>(*bottoms, **params): a layer of that type. Returns its Top
    (ntop=1, the default), a tuple of Tops (ntop > 1) or the Function
    itself (ntop=0)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def layer_fn(*args, **kwargs):
            fn = Function(name, args, kwargs)
            if fn.ntop == 0:
                return fn
            if fn.ntop == 1:
                return fn.tops[0]
            return fn.tops
        layer_fn.__name__ = name
        return layer_fn


class Parameters:
    """P.<Type>.<NAME>: the value NAME of an enum of <Type>Parameter, e.g.
    P.Pooling.MAX or P.Data.LMDB."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        class Param:
            def __getattr__(self, param_name):
                return getattr(getattr(caffe_pb2, name + "Parameter"), param_name)
        return Param()


layers = Layers()
params = Parameters()
