// The parts of the _dlcaffe extension, each binding one concept.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/layer.hpp"

namespace dlcaffe_python {

namespace py = pybind11;

// An owner for a blob the caller only has a pointer to: the blob's own
// shared_ptr where one owns it, else none (the caller keeps it alive).
std::shared_ptr<dlcaffe::Blob> BlobHandle(dlcaffe::Blob* blob);
// A str or os.PathLike argument as a path; a TypeError naming `what`
// (e.g. "caffe.Net: weights") for anything else.
std::string PathArgument(const py::handle& value, const std::string& what);
// A Python list of blobs (a layer's bottoms or tops).
py::list BlobList(const std::vector<dlcaffe::Blob*>& blobs);

// A layer's parameter blobs as pycaffe's BlobVec: a sequence of Blobs, and
// for Python layers add_blob(*shape). `owner` keeps the vector alive.
struct BlobVec {
  std::shared_ptr<void> owner;
  std::vector<std::shared_ptr<dlcaffe::Blob>>* blobs;
  dlcaffe::Context* context;
  bool can_add;
};

// A layer of a net, as net.layers shows it (Python layers show their own
// Python object instead).
struct LayerView {
  std::shared_ptr<void> owner;
  dlcaffe::Layer* layer;
};

void BindBlob(py::module_& m);
void BindNet(py::module_& m);
void BindSolver(py::module_& m);
void BindGeneration(py::module_& m);
void RegisterPythonLayer();

}  // namespace dlcaffe_python
