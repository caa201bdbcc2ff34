// caffe.Net: the C++ Net with the primitives pycaffe's Python side
// (dlcaffe/pycaffe.py) builds blobs, params, forward(**kwargs) and the rest on.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/memory_data_layer.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/net_hdf5.hpp"
#include "host_mirror.hpp"
#include "python_layer.hpp"
#include "runtime.hpp"

namespace dlcaffe_python {

using dlcaffe::Net;

namespace {

int PhaseArgument(const py::handle& value) {
  if (!py::isinstance<py::int_>(value))
    throw py::type_error("caffe.Net: phase must be caffe.TRAIN or caffe.TEST, not " +
                         std::string(py::repr(value)));
  const int phase = value.cast<int>();
  if (phase != caffe::TRAIN && phase != caffe::TEST)
    throw py::value_error("caffe.Net: phase must be caffe.TRAIN (0) or caffe.TEST (1), not " +
                          std::to_string(phase));
  return phase;
}

// pycaffe's two signatures:
//   Net(network_file, phase, level=0, stages=None, weights=None)
//   Net(network_file, weights, phase)
// network_file may be a prototxt, an .onnx model, or a caffe_pb2.NetParameter.
std::shared_ptr<Net> MakeNet(const py::object& network, const py::args& rest,
                             const py::kwargs& kwargs) {
  py::object phase = py::none(), level = py::int_(0), stages = py::none(), weights = py::none();
  if (!rest.empty() && (py::isinstance<py::str>(rest[0]) || py::hasattr(rest[0], "__fspath__"))) {
    if (rest.size() != 2)
      throw py::type_error("caffe.Net(network_file, weights, phase) takes 3 arguments");
    weights = rest[0];
    phase = rest[1];
  } else {
    const char* names[] = {"phase", "level", "stages", "weights"};
    py::object* slots[] = {&phase, &level, &stages, &weights};
    if (rest.size() > 4) throw py::type_error("caffe.Net: too many arguments");
    for (size_t i = 0; i < rest.size(); ++i) *slots[i] = rest[i];
    for (auto item : kwargs) {
      const std::string key = item.first.cast<std::string>();
      bool known = false;
      for (int i = 0; i < 4; ++i)
        if (key == names[i]) *slots[i] = py::reinterpret_borrow<py::object>(item.second), known = true;
      if (!known) throw py::type_error("caffe.Net: unexpected keyword argument '" + key + "'");
    }
  }
  if (phase.is_none()) throw py::type_error("caffe.Net: the phase (caffe.TRAIN or caffe.TEST) is required");
  const auto net_phase = static_cast<caffe::Phase>(PhaseArgument(phase));
  std::vector<std::string> stage_list;
  if (!stages.is_none()) stage_list = stages.cast<std::vector<std::string>>();

  dlcaffe::Context& context = CurrentContext();
  DeviceWork work;
  std::shared_ptr<Net> net;
  if (py::hasattr(network, "SerializeToString")) {
    caffe::NetParameter param;
    if (!param.ParseFromString(network.attr("SerializeToString")().cast<std::string>()))
      throw py::value_error("caffe.Net: not a NetParameter");
    param.mutable_state()->set_phase(net_phase);
    param.mutable_state()->set_level(level.cast<int>());
    for (const std::string& stage : stage_list) param.mutable_state()->add_stage(stage);
    net = std::make_shared<Net>(param, context);
  } else {
    net = std::make_shared<Net>(PathArgument(network, "caffe.Net: network_file"), net_phase,
                                context,
                                level.cast<int>(), stage_list);
  }
  if (!weights.is_none()) net->CopyTrainedLayersFrom(PathArgument(weights, "caffe.Net: weights"));
  FlushLog();
  return net;
}

std::vector<int> BlobIndices(const Net& net, const std::vector<dlcaffe::Blob*>& blobs) {
  std::vector<int> indices;
  for (dlcaffe::Blob* blob : blobs)
    for (size_t i = 0; i < net.blobs().size(); ++i)
      if (net.blobs()[i].get() == blob) indices.push_back(static_cast<int>(i));
  return indices;
}

int CheckedLayer(const Net& net, int index, const char* what) {
  const int last = static_cast<int>(net.layers().size()) - 1;
  if (index < 0 || index > last)
    throw py::index_error(std::string(what) + ": layer index " + std::to_string(index) +
                          " is outside 0.." + std::to_string(last));
  return index;
}

// pycaffe's _set_input_arrays: feeds the first layer, a MemoryData layer.
void SetInputArrays(Net& net, const py::array_t<float, py::array::c_style>& data,
                    const py::array_t<float, py::array::c_style>& labels) {
  auto* input = net.layers().empty()
                    ? nullptr
                    : dynamic_cast<dlcaffe::MemoryDataLayer*>(net.layers()[0].get());
  if (!input)
    throw py::value_error("set_input_arrays: the first layer of net '" + net.name() +
                          "' must be a MemoryData layer");
  if (data.ndim() != 4)
    throw py::value_error("set_input_arrays: data must be 4-D (N, C, H, W)");
  const int n = static_cast<int>(data.shape(0));
  if (labels.size() != n)
    throw py::value_error("set_input_arrays: " + std::to_string(labels.size()) + " labels for " +
                          std::to_string(n) + " images");
  if (data.shape(1) != input->channels() || data.shape(2) != input->height() ||
      data.shape(3) != input->width())
    throw py::value_error("set_input_arrays: images must be " + std::to_string(input->channels()) +
                          "x" + std::to_string(input->height()) + "x" +
                          std::to_string(input->width()) + " for layer '" + input->name() + "'");
  if (n == 0 || n % input->batch_size() != 0)
    throw py::value_error("set_input_arrays: the number of images (" + std::to_string(n) +
                          ") must be a positive multiple of the batch size (" +
                          std::to_string(input->batch_size()) + ")");
  DeviceWork work;
  input->Reset(data.data(), labels.data(), n);
}

}  // namespace

void BindNet(py::module_& m) {
  py::class_<LayerView>(m, "Layer_", "A layer of a net: its type, name and parameter blobs.")
      .def_property_readonly("type", [](const LayerView& v) { return std::string(v.layer->type()); })
      .def_property_readonly("name", [](const LayerView& v) { return v.layer->name(); })
      .def_property_readonly("blobs", [](const LayerView& v) {
        return BlobVec{v.owner, &v.layer->blobs(), &v.layer->context(), false};
      })
      .def("__repr__", [](const LayerView& v) {
        return "<caffe.Layer '" + v.layer->name() + "' (" + v.layer->type() + ")>";
      });

  py::class_<Net, std::shared_ptr<Net>>(m, "Net", R"doc(
A net from a prototxt, an .onnx model or a caffe_pb2.NetParameter, on the
current device:
  Net(network_file, phase, level=0, stages=None, weights=None)
  Net(network_file, weights, phase))doc")
      .def(py::init(&MakeNet), py::arg("network_file"))
      .def_property_readonly("name", &Net::name)
      .def_property_readonly("phase", [](const Net& n) { return static_cast<int>(n.phase()); })
      .def_property_readonly("_blob_names", &Net::blob_names)
      .def_property_readonly("_blobs", &Net::blobs)
      .def_property_readonly("_layer_names", &Net::layer_names)
      .def_property_readonly("layers", [](const std::shared_ptr<Net>& net) {
        py::list list;
        for (const auto& layer : net->layers()) {
          py::object python = PythonLayerObject(layer.get());
          if (python.is_none()) python = py::cast(LayerView{net, layer.get()});
          list.append(python);
        }
        return list;
      }, "The layers, in order (Python layers as their Python objects).")
      .def("_layer_blobs", [](const std::shared_ptr<Net>& net, int i) {
        dlcaffe::Layer* layer = net->layers()[CheckedLayer(*net, i, "_layer_blobs")].get();
        return BlobVec{net, &layer->blobs(), &layer->context(), false};
      })
      .def_property_readonly("_inputs", [](const Net& n) { return BlobIndices(n, n.input_blobs()); })
      .def_property_readonly("_outputs", &Net::output_blob_indices)
      .def("_bottom_ids", [](const Net& n, int i) { return n.bottom_ids()[CheckedLayer(n, i, "_bottom_ids")]; })
      .def("_top_ids", [](const Net& n, int i) { return n.top_ids()[CheckedLayer(n, i, "_top_ids")]; })
      .def_property_readonly("_blob_loss_weights", &Net::blob_loss_weights)
      .def("_forward", [](Net& n, int start, int end) -> py::object {
        CheckedLayer(n, start, "forward"), CheckedLayer(n, end, "forward");
        float loss = 0.f;
        {
          DeviceWork work;
          if (start == 0 && end == static_cast<int>(n.layers().size()) - 1) loss = n.Forward();
          else n.ForwardFromTo(start, end);
        }
        FlushLog();
        return py::float_(loss);
      })
      .def("_backward", [](Net& n, int start, int end) {
        CheckedLayer(n, start, "backward"), CheckedLayer(n, end, "backward");
        {
          DeviceWork work;
          n.BackwardFromTo(start, end);
        }
        FlushLog();
      })
      .def("reshape", [](Net& n) {
        DeviceWork work;
        n.Reshape();
      }, "Reshapes every layer from the input blobs' current shapes.")
      .def("copy_from", [](Net& n, const py::object& path) {
        {
          DeviceWork work;
          n.CopyTrainedLayersFrom(PathArgument(path, "copy_from: weights"));
        }
        FlushLog();
      }, py::arg("weights"), "Loads weights by layer name (.caffemodel, binary or text, or HDF5).")
      .def("share_with", [](Net& n, const Net& other) {
        DeviceWork work;
        n.ShareTrainedLayersWith(other);
      }, py::arg("other"), "Uses the other net's weights (same storage) for layers of the same name.")
      .def("save", [](const Net& n, const py::object& path, bool write_diff) {
        DeviceWork work;
        caffe::NetParameter param;
        n.ToProto(&param, write_diff);
        dlcaffe::WriteProtoToBinaryFile(param, PathArgument(path, "net: filename"));
      }, py::arg("filename"), py::arg("write_diff") = false,
         "Writes the net with its weights as a binary .caffemodel (atomically).")
      .def("save_hdf5", [](const Net& n, const py::object& path, bool write_diff) {
        DeviceWork work;
        dlcaffe::SaveNetHdf5(n, PathArgument(path, "net: filename"), write_diff);
      }, py::arg("filename"), py::arg("write_diff") = false,
         "Writes the weights (and with write_diff their diffs) in Caffe's HDF5 layout, atomically.")
      .def("load_hdf5", [](Net& n, const py::object& path) {
        DeviceWork work;
        dlcaffe::LoadNetHdf5(n, PathArgument(path, "net: filename"));
      }, py::arg("filename"), "Loads weights by layer name from Caffe's HDF5 layout.")
      .def("_to_proto_bytes", [](const Net& n, bool write_diff) {
        DeviceWork work;
        caffe::NetParameter param;
        n.ToProto(&param, write_diff);
        return py::bytes(param.SerializeAsString());
      }, py::arg("write_diff") = false)
      .def("clear_param_diffs", [](Net& n) {
        DeviceWork work;
        n.ClearParamDiffs();
      }, "Sets every learnable parameter's diff to zero.")
      .def("_set_input_arrays", &SetInputArrays)
      .def("set_debug_info", &Net::set_debug_info, py::arg("value"),
           "Caffe's debug_info: log each layer's mean absolute values.");
}

}  // namespace dlcaffe_python
