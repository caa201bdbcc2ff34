// ONNX model bytes -> ImportOnnx (graph checks, initializer decoding, shape
// folding, op handlers, fusions) -> a Net built from the result for
// inference and for training.
#include <string>

#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlcaffe;
  Context& ctx = fuzz::FuzzContext();
  const std::string path = fuzz::WriteScratchFile("model.onnx", data, size);
  for (bool training : {false, true}) {
    fuzz::ExpectCleanRejection([&] {
      OnnxImportOptions options;
      options.training = training;
      OnnxModel model = ImportOnnx(path, options);
      model.net.mutable_state()->set_phase(training ? caffe::TRAIN : caffe::TEST);
      Net net(model.net, ctx);
    });
  }
  return 0;
}
