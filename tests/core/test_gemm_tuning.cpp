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
#include "../../src/core/net_tuning.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Every test of this program uses its own, initially empty, tuning cache
// (set before the first GEMM reads it).
const std::string& CacheDir() {
  static const std::string dir = [] {
    const std::string d = TempDir();
    SetTestOption("tuning_cache", d);
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
GemmConfig NotTheRule(const Context& device, const GemmArgs& args) {
  const std::string rule = RuleGemmConfig(device, args).Name();
  for (const GemmConfig& c : GemmConfigFamily())
    if (c.Name() != rule && c.Supports(args.trans_a, args.trans_b)) return c;
  ADD_FAILURE() << "the family has one configuration only";
  return GemmConfig();
}

TEST(GemmTuning, StoredWinnerIsWhatTheDispatcherRuns) {
  CacheDir();
  const Context& device = TestContext();
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
  EXPECT_NE(text.find(device.info().name), std::string::npos) << text;
  EXPECT_NE(text.find("37 41 43 0 1 0 1 | " + winner.Name()), std::string::npos) << text;
}

TEST(GemmTuning, ConfigurationsOutsideTheTestedFamilyAreDropped) {
  CacheDir();
  const Context& device = TestContext();
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

TEST(GemmTuning, NoCandidateStartsAfterTheDeadline) {
  CacheDir();
  const GemmTuning t =
      TuneGemm(TestContext(), Shape(19, 45, 33, false, false), 1, std::chrono::steady_clock::now());
  EXPECT_EQ(t.candidates, 0);
  EXPECT_GT(t.rule_ms, 0.0);
  EXPECT_EQ(t.best.Name(), t.rule.Name());
}

// Two fully connected layers: six distinct products in forward + backward.
const char kTwoLayerNet[] = R"(
  name: "two_fc"
  force_backward: true
  layer { name: "data" type: "Input" top: "data"
          input_param { shape { dim: 5 dim: 37 } } }
  layer { name: "fc1" type: "InnerProduct" bottom: "data" top: "fc1"
          inner_product_param { num_output: 23 weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "fc2" type: "InnerProduct" bottom: "fc1" top: "fc2"
          inner_product_param { num_output: 11 weight_filler { type: "gaussian" std: 0.1 } } }
)";

// Whatever the timings, what tune stores is consistent with its report:
// winners that differ from the rule only if the net ran faster with them,
// else the rule's own choices for the shapes it tuned; the dispatcher then
// runs what was stored. A budget too small to start any candidate still
// tunes nothing beyond the first product's rule.
TEST(GemmTuning, NetTuningStoresWinnersOnlyIfTheNetRunsFaster) {
  CacheDir();
  Context& ctx = TestContext();
  caffe::NetParameter param;
  ReadProtoFromTextString(kTwoLayerNet, "<two_fc>", &param);
  Net net(param, ctx);
  NetTuningOptions options;
  options.iterations = 1;
  options.net_iterations = 2;
  options.budget_seconds = 10;  // cold kernel builds on a CI machine included
  const NetTuningReport r = TuneNet(ctx, net, options);
  EXPECT_GE(r.products, 4);
  ASSERT_GE(r.tuned, 1);
  EXPECT_LE(r.tuned, r.products);
  EXPECT_GT(r.tuned_share, 0.0);
  EXPECT_LE(r.tuned_share, 1.0 + 1e-9);
  EXPECT_GT(r.net_rule_ms, 0.0);
  EXPECT_GT(r.net_tuned_ms, 0.0);
  ASSERT_FALSE(r.stored.empty());
  for (const GemmTuning& t : r.tunings) {
    const auto stored = r.stored.find(t.key);
    if (r.kept) {
      EXPECT_LT(r.net_tuned_ms, r.net_rule_ms);
      // Only configurations other than the rule's are stored, and each is
      // the fastest the product's tuning found.
      if (stored != r.stored.end()) {
        EXPECT_EQ(stored->second.Name(), t.best.Name());
        EXPECT_NE(stored->second.Name(), t.rule.Name());
      } else {
        EXPECT_EQ(t.best.Name(), t.rule.Name());
      }
    } else {
      ASSERT_NE(stored, r.stored.end()) << t.key.Text();
      EXPECT_EQ(stored->second.Name(), t.rule.Name());
    }
  }
  for (const auto& entry : r.stored) {
    GemmConfig looked_up;
    ASSERT_TRUE(LookupTunedGemmConfig(ctx, entry.first, &looked_up));
    EXPECT_EQ(looked_up.Name(), entry.second.Name());
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
