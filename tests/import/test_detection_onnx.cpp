// torchvision's detectors from ONNX (issue 50, item 2): sizes that follow
// the data. Exported by Debian's PyTorch 1.13 (TorchScript, opset 17;
// tools/onnx/make_detection_tests.py, random weights, small images), each
// imports and gives PyTorch's float64 boxes, scores and labels:
// - ssdlite320_mobilenet_v3_large: 90 classes each through Greater,
//   NonZero, GatherND and a TopK of k = min(candidates, found), then the
//   batched NonMaxSuppression inside an If on "any boxes";
// - retinanet_resnet50_fpn: per level a TopK over classes x anchors split
//   by integer division (torch's floor division spelled with Mod, Xor and
//   Where), box decoding of the picked anchors;
// - fasterrcnn_mobilenet_v3_large_320_fpn: the RPN's proposals, the
//   feature level of each by Floor(Log2(...)), RoiAlign per level and
//   ScatterElements back in order, the box head over a run-time number of
//   regions, per-class decoding, Reshape and Expand to run-time sizes;
// - and ssdlite with a threshold no score reaches: every size 0, the If's
//   other branch, no detections.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

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

TEST(DetectionOnnx, TorchvisionDetectorsMatchPyTorch) {
  const std::string dir = TempDir();
  const std::vector<std::string> nets = {
      "ssdlite320_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large_nothing_found",
      "retinanet_resnet50_fpn", "fasterrcnn_mobilenet_v3_large_320_fpn"};
  std::string list;
  for (const std::string& net : nets) list += (list.empty() ? "" : ",") + net;
  const std::string log = Generate(dir, list);
  ASSERT_FALSE(HasFailure()) << log;
  // PyTorch found detections in all but the one meant to find none.
  for (const std::string& net : nets) {
    const bool none = net.find("nothing_found") != std::string::npos;
    EXPECT_TRUE(std::regex_search(
        log, std::regex(net + ": " + (none ? "0" : "[1-9][0-9]*") + " detections")))
        << net << "\n" << log;
  }
  const ToolResult r = RunTool("onnx_test_runner", "--verbose '" + dir + "'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "4 passed, 0 failed, 0 skipped")) << r.output;
  for (const std::string& net : nets)
    EXPECT_TRUE(Contains(r.output, "PASS " + net + " (worst output error")) << net << "\n" << r.output;
}

}  // namespace test
}  // namespace dlcaffe
