// Prototxt text -> NetParameter (parse, V0/V1 upgrade) -> a Net built on the
// default device for both phases: every layer's setup and shape checks run,
// nothing is run forward.
#include <string>

#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlcaffe;
  Context& ctx = fuzz::FuzzContext();
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::ExpectCleanRejection([&] {
    caffe::NetParameter param;
    ReadProtoFromTextString(text, "fuzz.prototxt", &param);
    UpgradeNetAsNeeded("fuzz.prototxt", &param);
    for (caffe::Phase phase : {caffe::TRAIN, caffe::TEST}) {
      caffe::NetParameter stated = param;
      stated.mutable_state()->set_phase(phase);
      Net net(stated, ctx);
    }
  });
  return 0;
}
