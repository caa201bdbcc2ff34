#include "python_layer.hpp"

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "host_mirror.hpp"
#include "runtime.hpp"

namespace dlcaffe_python {
namespace {

using dlcaffe::Blob;

// "ValueError: message" and the traceback, for an error naming the layer.
std::string Describe(py::error_already_set& error) {
  std::string text = error.what();
  try {
    py::object format = py::module_::import("traceback").attr("format_exception");
    py::list lines = format(error.type(), error.value(), error.trace());
    text.clear();
    for (py::handle line : lines) text += line.cast<std::string>();
  } catch (...) {
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

class PythonLayer : public dlcaffe::Layer {
 public:
  PythonLayer(const caffe::LayerParameter& param, dlcaffe::Context& ctx) : Layer(param, ctx) {
    const caffe::PythonParameter& python = param.python_param();
    DLC_REQUIRE(!python.module().empty() && !python.layer().empty(),
                Where() << "python_param needs both module and layer");
    py::module_ module;
    try {
      module = py::module_::import(python.module().c_str());
    } catch (py::error_already_set& error) {
      DLC_FAIL(Where() << "cannot import module '" << python.module() << "' (python_param "
                       "module; is its folder on sys.path or PYTHONPATH?):\n" << Describe(error));
    }
    DLC_REQUIRE(py::hasattr(module, python.layer().c_str()),
                Where() << "module '" << python.module() << "' (" <<
                    py::str(py::getattr(module, "__file__", py::str("?"))).cast<std::string>()
                        << ") has no layer class '" << python.layer() << "'");
    py::object layer_class = module.attr(python.layer().c_str());
    py::object param_message = py::module_::import("dlcaffe.proto.caffe_pb2")
                                   .attr("LayerParameter")
                                   .attr("FromString")(py::bytes(param.SerializeAsString()));
    try {
      self_ = layer_class(param_message);
    } catch (py::error_already_set& error) {
      DLC_FAIL(Where() << python.module() << "." << python.layer() << "(param) raised:\n"
                       << Describe(error));
    }
  }

  ~PythonLayer() override {
    // The Python object may outlive the layer: leave it its blobs as a list.
    if (!self_) return;
    py::list blobs;
    for (const auto& blob : blobs_) blobs.append(blob);
    py::setattr(self_, "blobs", blobs);
  }

  const char* type() const override { return "Python"; }
  py::object self() const { return self_; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    py::setattr(self_, "param_str", py::str(param_.python_param().param_str()));
    py::setattr(self_, "phase", py::int_(static_cast<int>(param_.phase())));
    py::setattr(self_, "blobs", py::cast(BlobVec{nullptr, &blobs_, ctx_, true}));
    Call("setup", BlobList(bottom), BlobList(top));
    // Every blob the layer made is learnable unless the net says otherwise.
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(static_cast<int>(i), true);
  }
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    Call("reshape", BlobList(bottom), BlobList(top));
  }
  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    Call("forward", BlobList(bottom), BlobList(top));
  }
  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    Call("backward", BlobList(top), py::cast(propagate_down), BlobList(bottom));
  }

 private:
  // Calls self.<method>(...) as device work's guest: arrays current on
  // entry, the layer's writes on the device on return.
  template <typename... Args>
  void Call(const char* method, Args&&... args) {
    HostMirrors::Instance().Invalidate();
    FlushLog();
    const caffe::PythonParameter& python = param_.python_param();
    DLC_REQUIRE(py::hasattr(self_, method), Where() << python.module() << "." << python.layer()
                                                    << " has no method " << method << "()");
    try {
      self_.attr(method)(std::forward<Args>(args)...);
    } catch (py::error_already_set& error) {
      DLC_FAIL(Where() << python.module() << "." << python.layer() << "." << method
                       << "() raised:\n" << Describe(error));
    }
    HostMirrors::Instance().Flush();
  }

  py::object self_;
};

}  // namespace

py::object PythonLayerObject(dlcaffe::Layer* layer) {
  auto* python = dynamic_cast<PythonLayer*>(layer);
  return python ? python->self() : py::none();
}

void RegisterPythonLayer() {
  dlcaffe::LayerRegistry::Add("Python", [](const caffe::LayerParameter& param, dlcaffe::Context& ctx) {
    return std::unique_ptr<dlcaffe::Layer>(new PythonLayer(param, ctx));
  });
}

}  // namespace dlcaffe_python
