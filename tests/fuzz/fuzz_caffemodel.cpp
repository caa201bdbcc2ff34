// Binary .caffemodel bytes -> CopyTrainedLayersFrom into a small fixed net
// (convolution, batch norm, inner product: blobs of several shapes), then one
// forward pass, so that whatever was accepted is also used.
#include <memory>
#include <string>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "fuzz_support.hpp"
#include "fuzz_nets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlcaffe;
  Context& ctx = fuzz::FuzzContext();
  static std::unique_ptr<Net> net = [&] {
    caffe::NetParameter param;
    ReadProtoFromTextString(fuzz::kSmallDeployNet, "small_deploy.prototxt", &param);
    param.mutable_state()->set_phase(caffe::TEST);
    return std::make_unique<Net>(param, ctx);
  }();
  const std::string path = fuzz::WriteScratchFile("model.caffemodel", data, size);
  fuzz::ExpectCleanRejection([&] {
    net->CopyTrainedLayersFrom(path);
    net->Forward();
  });
  return 0;
}
