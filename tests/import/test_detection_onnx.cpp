// torchvision's detectors from ONNX (issue 50, item 2): sizes that follow
// the data. ssdlite320_mobilenet_v3_large exported by Debian's PyTorch 1.13
// (TorchScript, opset 17; tools/onnx/make_detection_tests.py) imports and
// gives PyTorch's float64 boxes, scores and labels: 90 classes each through
// Greater, NonZero, GatherND, a TopK of k = min(candidates, found), then
// the batched NonMaxSuppression inside an If on "any boxes". And the same
// net with a threshold no score reaches: every size 0, the If's other
// branch, no detections.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "util/run_dlcaffe.hpp"
#include "util/run_script.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::string Generate(const std::string& dir, const std::string& nets) {
  const ToolResult r = RunCommand("cd '" + SourceDir() + "' && '" + TestPython() +
                                  "' tools/onnx/make_detection_tests.py '" + dir +
                                  "' --small --nets " + nets);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

}  // namespace

TEST(DetectionOnnx, SsdliteMatchesPyTorchWithAndWithoutDetections) {
  const std::string dir = TempDir();
  const std::string log =
      Generate(dir, "ssdlite320_mobilenet_v3_large,ssdlite320_mobilenet_v3_large_nothing_found");
  ASSERT_FALSE(HasFailure()) << log;
  // PyTorch found detections in one and none in the other.
  EXPECT_TRUE(std::regex_search(log, std::regex("ssdlite320_mobilenet_v3_large: [1-9][0-9]* detections")))
      << log;
  EXPECT_TRUE(Contains(log, "ssdlite320_mobilenet_v3_large_nothing_found: 0 detections")) << log;
  const ToolResult r = RunTool("onnx_test_runner", "--verbose '" + dir + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "2 passed, 0 failed, 0 skipped")) << r.output;
  EXPECT_TRUE(Contains(r.output, "PASS ssdlite320_mobilenet_v3_large (worst output error")) << r.output;
  EXPECT_TRUE(Contains(r.output, "PASS ssdlite320_mobilenet_v3_large_nothing_found")) << r.output;
}

}  // namespace test
}  // namespace dlcaffe
