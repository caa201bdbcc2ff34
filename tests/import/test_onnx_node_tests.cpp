// ONNX's backend node tests as the onnx 1.17.0 wheel carries them (opsets up
// to 22; Debian's libonnx-testdata, which test_onnx_conformance runs, stops
// at 17), through scripts/onnx_node_tests.sh --offline: every test whose
// operators the importer supports must pass or be skipped with its reason.
// scripts/install_deps.sh fetches the data; without them this test fails
// (it never passes having run nothing). docs/onnx.md keeps the counts; the
// floors below are those counts (less the four Gelu `_expanded` tests,
// which pass once Sum broadcasts), so that a change which turns passing
// tests into skips is caught too.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "util/run_dlcaffe.hpp"

namespace dlcaffe {
namespace test {
namespace {

TEST(OnnxNodeTests, WheelNodeTestsOfSupportedOpsPass) {
  const ToolResult r = RunCommand("bash scripts/onnx_node_tests.sh --offline 2>&1");
  ASSERT_NE(r.exit_code, 2) << "the onnx wheel's node tests are missing (scripts/install_deps.sh "
                               "fetches them):\n"
                            << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("\\n(\\d+) passed, (\\d+) failed, (\\d+) skipped")))
      << r.output;
  const int passed = std::stoi(m[1]), failed = std::stoi(m[2]), skipped = std::stoi(m[3]);
  std::stringstream lines(r.output);
  std::string line, failures;
  // The per-opset table: "opset models supported pass fail skip".
  std::map<std::string, int> opset_passed;
  const std::regex row("(\\d+|none|all) +(\\d+) +(\\d+) +(\\d+) +(\\d+) +(\\d+)");
  while (std::getline(lines, line)) {
    if (line.rfind("FAIL ", 0) == 0) failures += line + "\n";
    std::smatch cells;
    if (std::regex_match(line, cells, row)) opset_passed[cells[1]] = std::stoi(cells[4]);
  }
  EXPECT_EQ(failed, 0) << failures;
  EXPECT_EQ(passed + failed + skipped, 1288) << r.output;
  EXPECT_GE(passed, 526) << "fewer node tests pass than before:\n" << r.output;
  // The opsets past Debian's data, each at its count in docs/onnx.md.
  const std::map<std::string, int> floors = {{"18", 149}, {"19", 24}, {"20", 11}, {"21", 74}};
  for (const auto& f : floors)
    EXPECT_GE(opset_passed[f.first], f.second) << "opset " << f.first << ":\n" << r.output;
  EXPECT_EQ(r.exit_code, failed == 0 ? 0 : 1);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
