// Net(path, phase, ...) on an .onnx file (net_file_readers.hpp): the model
// imported (for training in the TRAIN phase), weights included; dynamic
// input dimensions start at 1 and follow the input blobs' shapes (imported
// again when those change).
#include <glog/logging.h>

#include "dlcaffe/net_file_readers.hpp"
#include "dlcaffe/onnx_import.hpp"

namespace dlcaffe {

namespace {

bool ReadOnnxNet(const std::string& path, caffe::Phase phase, const RunOptions& run,
                 NetFile* file) {
  if (!IsOnnxPath(path)) return false;
  OnnxImportOptions options = OnnxImportOptionsFor(run, phase == caffe::TRAIN);
  options.dynamic_dimension_value = 1;
  OnnxModel model = ImportOnnx(path, options);
  file->param.Swap(&model.net);
  // An ONNX graph has no loss layer: training gradients start from diffs
  // the caller sets on its outputs (net.backward(**diffs) in Python), so
  // every layer runs backward, as under Caffe's force_backward.
  if (phase == caffe::TRAIN) file->param.set_force_backward(true);
  if (!model.dynamic_inputs.empty()) {
    file->resolver = OnnxInputShapeResolver(path, options);
    std::string names;
    for (const std::string& name : model.dynamic_inputs)
      names += (names.empty() ? "'" : ", '") + name + "'";
    LOG(INFO) << path << ": the dynamic dimensions of " << names
              << " start at 1; the net follows its input blobs' shapes";
  }
  return true;
}

struct Registration {
  Registration() { RegisterNetFileReader(ReadOnnxNet); }
} g_registration;

}  // namespace

}  // namespace dlcaffe
