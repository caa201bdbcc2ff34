// GEMM tuning: winners stored per device and read back by the dispatcher;
// only configurations of the tested family are ever taken from a file; the
// recording of a net's products; the tuner's choice is among the candidates
// and its result matches the rule's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../../src/core/gemm_tuning.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/io.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Every test of this program uses its own, initially empty, tuning cache
// (set before the first GEMM reads it).
const std::string& CacheDir() {
  static const std::string dir = [] {
    const std::string d = TempDir();
    setenv("DLCAFFE_TUNING_CACHE", d.c_str(), 1);
    return d;
  }();
  return dir;
}

GemmArgs Shape(int M, int N, int K, bool ta, bool tb) {
  GemmArgs g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.trans_a = ta ? Transpose::kYes : Transpose::kNo;
  g.trans_b = tb ? Transpose::kYes : Transpose::kNo;
  return g;
}

// A family member the rule does not pick for `args` on this device.
GemmConfig NotTheRule(const DeviceInfo& device, const GemmArgs& args) {
  const std::string rule = RuleGemmConfig(device, args).Name();
  for (const GemmConfig& c : GemmConfigFamily())
    if (c.Name() != rule && c.Supports(args.trans_a, args.trans_b)) return c;
  ADD_FAILURE() << "the family has one configuration only";
  return GemmConfig();
}

TEST(GemmTuning, StoredWinnerIsWhatTheDispatcherRuns) {
  CacheDir();
  const DeviceInfo& device = TestContext().info();
  const GemmArgs tuned = Shape(37, 41, 43, false, true), other = Shape(37, 41, 44, false, true);
  const GemmConfig winner = NotTheRule(device, tuned);
  StoreTunedGemmConfigs(device, {{ShapeKeyOf(tuned), winner}});
  EXPECT_EQ(ChooseGemmConfig(device, tuned).Name(), winner.Name());
  EXPECT_EQ(ChooseGemmConfig(device, other).Name(), RuleGemmConfig(device, other).Name());
  // The key covers transposes, grouping and batch.
  GemmArgs grouped = tuned;
  grouped.c_group = 5;
  grouped.c_image = 100;
  EXPECT_EQ(ChooseGemmConfig(device, grouped).Name(), RuleGemmConfig(device, grouped).Name());
  GemmArgs batched = tuned;
  batched.batch = 2;
  EXPECT_EQ(ChooseGemmConfig(device, batched).Name(), RuleGemmConfig(device, batched).Name());
  // The file is readable text that names the device and the winner.
  const std::string text = ReadFileBytes(GemmTuningFile(device));
  EXPECT_NE(text.find(device.name), std::string::npos) << text;
  EXPECT_NE(text.find("37 41 43 0 1 0 1 | " + winner.Name()), std::string::npos) << text;
}

TEST(GemmTuning, ConfigurationsOutsideTheTestedFamilyAreDropped) {
  CacheDir();
  const DeviceInfo& device = TestContext().info();
  const std::string path = GemmTuningFile(device);
  ASSERT_FALSE(path.empty());
  // A file from another version: an unknown configuration, a broken line.
  std::string text = ReadFileBytes(path);
  text += "51 52 53 0 0 0 1 | local wg3x3 mr99 nr99 vw4 tk16\nnot a line\n";
  WriteFileAtomically(path, text);
  const GemmArgs added = Shape(60, 61, 62, false, false);
  const GemmConfig winner = NotTheRule(device, added);
  StoreTunedGemmConfigs(device, {{ShapeKeyOf(added), winner}});
  const std::string rewritten = ReadFileBytes(path);
  EXPECT_EQ(rewritten.find("mr99"), std::string::npos) << rewritten;
  EXPECT_EQ(rewritten.find("not a line"), std::string::npos) << rewritten;
  EXPECT_NE(rewritten.find("60 61 62 0 0 0 1 | " + winner.Name()), std::string::npos);
  // Earlier winners survive the merge.
  EXPECT_NE(rewritten.find("37 41 43 0 1 0 1 | "), std::string::npos) << rewritten;
  const GemmArgs unknown = Shape(51, 52, 53, false, false);
  EXPECT_EQ(ChooseGemmConfig(device, unknown).Name(), RuleGemmConfig(device, unknown).Name());
  EXPECT_EQ(ChooseGemmConfig(device, added).Name(), winner.Name());
}

TEST(GemmTuning, RecordingKeepsOneProductPerShape) {
  CacheDir();
  Context& ctx = TestContext();
  BufferPtr buffer = ctx.Allocate(sizeof(float) * 64);
  GemmArgs g = Shape(3, 4, 5, false, false);
  g.A = g.B = g.C = buffer->mem();
  g.c_offset = 40;
  GemmRecording recording;
  EXPECT_EQ(ActiveGemmRecording(), &recording);
  Gemm(ctx, g);
  Gemm(ctx, g);
  GemmArgs transposed = g;
  transposed.trans_b = Transpose::kYes;
  Gemm(ctx, transposed);
  ASSERT_EQ(recording.products().size(), 2u);
  EXPECT_EQ(recording.products()[0].c_offset, 40u);
  EXPECT_EQ(recording.products()[1].trans_b, Transpose::kYes);
}

TEST(GemmTuning, TunerPicksACandidateThatMatchesTheRule) {
  CacheDir();
  Context& ctx = TestContext();
  GemmArgs g = Shape(19, 45, 33, true, false);
  g.lda = 21;
  g.ldc = 50;
  g.a_offset = 3;
  g.relu = true;
  const GemmTuning t = TuneGemm(ctx, g, 1);
  EXPECT_GT(t.candidates, 0);
  EXPECT_EQ(t.rejected, 0);
  EXPECT_GT(t.rule_ms, 0.0);
  EXPECT_LE(t.best_ms, t.rule_ms);
  bool in_family = false;
  for (const GemmConfig& c : GemmConfigFamily()) in_family |= c.Name() == t.best.Name();
  EXPECT_TRUE(in_family) << t.best.Name();
  EXPECT_TRUE(t.best.Supports(g.trans_a, g.trans_b));
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
