// type: "Python" layers: a class from a Python module runs as a layer
// (python_param { module layer param_str }), with pycaffe's setup, reshape,
// forward and backward on Blobs whose arrays sync as host_mirror.hpp says.
#pragma once
#include <pybind11/pybind11.h>

#include "dlcaffe/layer.hpp"

namespace dlcaffe_python {

namespace py = pybind11;

// The Python object behind a Python layer; None for any other layer.
py::object PythonLayerObject(dlcaffe::Layer* layer);

}  // namespace dlcaffe_python
