// Blob and BlobVec for Python: .data/.diff as numpy arrays (host_mirror.hpp
// says when they sync with the device), shape accessors, reshape, and the
// array protocols that let numpy and torch take the values without a copy.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "host_mirror.hpp"

namespace dlcaffe_python {

using dlcaffe::Blob;

std::shared_ptr<Blob> BlobHandle(Blob* blob) {
  std::weak_ptr<Blob> owned = blob->weak_from_this();
  if (std::shared_ptr<Blob> handle = owned.lock()) return handle;
  return std::shared_ptr<Blob>(blob, [](Blob*) {});
}

py::list BlobList(const std::vector<Blob*>& blobs) {
  py::list list;
  for (Blob* blob : blobs) list.append(BlobHandle(blob));
  return list;
}

namespace {

// reshape(2, 3, 4) and reshape((2, 3, 4)) alike, as pycaffe takes both.
std::vector<int> ShapeArguments(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0]))
    return args[0].cast<std::vector<int>>();
  return args.cast<std::vector<int>>();
}

void Assign(Blob& blob, bool diff, const py::object& values) {
  py::array target = HostMirrors::Instance().Array(blob, diff);
  py::module_::import("numpy").attr("copyto")(target, values);
}

int CheckedIndex(const BlobVec& vec, int index) {
  const int size = static_cast<int>(vec.blobs->size());
  if (index < 0) index += size;
  if (index < 0 || index >= size) throw py::index_error("blob index out of range");
  return index;
}

}  // namespace

void BindBlob(py::module_& m) {
  py::class_<Blob, std::shared_ptr<Blob>>(m, "Blob", R"doc(
An N-D array on the device with its gradient (diff). `data` and `diff` are
numpy float32 arrays over host copies: a write through them reaches the
device before the next forward/backward/step, and values the device computed
show at the next read (arrays kept across device work are refreshed after
it). An array stays valid after its blob and net are gone.)doc")
      .def_property("data", [](Blob& b) { return HostMirrors::Instance().Array(b, false); },
                    [](Blob& b, const py::object& v) { Assign(b, false, v); },
                    "The values, a numpy float32 array (read and write in place).")
      .def_property("diff", [](Blob& b) { return HostMirrors::Instance().Array(b, true); },
                    [](Blob& b, const py::object& v) { Assign(b, true, v); },
                    "The gradient, a numpy float32 array (read and write in place).")
      .def_property_readonly("shape", [](const Blob& b) {
        return py::tuple(py::cast(b.shape()));
      })
      .def_property_readonly("num", &Blob::num)
      .def_property_readonly("channels", &Blob::channels)
      .def_property_readonly("height", &Blob::height)
      .def_property_readonly("width", &Blob::width)
      .def_property_readonly("count", [](const Blob& b) { return b.count(); })
      .def("reshape", [](Blob& b, const py::args& args) { b.Reshape(ShapeArguments(args)); },
           "reshape(*shape): new shape (storage grows if needed; old arrays detach).")
      .def("__array__", [](Blob& b, py::object dtype) {
        py::array data = HostMirrors::Instance().Array(b, false);
        return dtype.is_none() ? py::object(data) : data.attr("astype")(dtype);
      }, py::arg("dtype") = py::none())
      .def("__dlpack__", [](Blob& b, py::kwargs kwargs) {
        return HostMirrors::Instance().Array(b, false).attr("__dlpack__")(**kwargs);
      }, "DLPack of .data (on the host: torch.from_dlpack(blob) shares it).")
      .def("__dlpack_device__", [](Blob& b) {
        return HostMirrors::Instance().Array(b, false).attr("__dlpack_device__")();
      })
      .def("__repr__", [](const Blob& b) { return "<caffe.Blob " + b.shape_string() + ">"; });

  py::class_<BlobVec>(m, "BlobVec", "A layer's parameter blobs (pycaffe's BlobVec).")
      .def("__len__", [](const BlobVec& v) { return v.blobs->size(); })
      .def("__getitem__", [](const BlobVec& v, int i) { return (*v.blobs)[CheckedIndex(v, i)]; })
      .def("__iter__", [](const BlobVec& v) {
        py::list list;
        for (const auto& blob : *v.blobs) list.append(blob);
        return py::iter(list);
      })
      .def("add_blob", [](BlobVec& v, const py::args& args) {
        if (!v.can_add) throw py::type_error("add_blob: only a Python layer adds blobs");
        v.blobs->push_back(std::make_shared<Blob>(*v.context, ShapeArguments(args)));
        return v.blobs->back();
      }, "add_blob(*shape): a new parameter blob (zero-filled), for Python layers in setup().")
      .def("__repr__", [](const BlobVec& v) {
        return "<caffe.BlobVec of " + std::to_string(v.blobs->size()) + " blobs>";
      });
}

}  // namespace dlcaffe_python
