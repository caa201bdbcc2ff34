// GEMM tuning: winners stored per device and read back by the dispatcher,
// keyed by shape, math and storage types (a winner for float32 math is not
// one for TF32 or 16-bit math), old files' keys read as float32; only
// configurations of the tested family are ever taken from a file; the
// recording of a net's products; the tuner's choice is among the candidates
// and its result matches the rule's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/core/cache_files.hpp"
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
  EXPECT_NE(text.find("37 41 43 0 1 0 1 float32 float32 float32 float32 | " + winner.Name()),
            std::string::npos)
      << text;
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
  EXPECT_NE(rewritten.find("60 61 62 0 0 0 1 float32 float32 float32 float32 | " +
                           winner.Name()),
            std::string::npos);
  // Earlier winners survive the merge.
  EXPECT_NE(rewritten.find("37 41 43 0 1 0 1 float32 float32 float32 float32 | "),
            std::string::npos)
      << rewritten;
  const GemmArgs unknown = Shape(51, 52, 53, false, false);
  EXPECT_EQ(ChooseGemmConfig(device, unknown).Name(), RuleGemmConfig(device, unknown).Name());
  EXPECT_EQ(ChooseGemmConfig(device, added).Name(), winner.Name());
}

// A family member that is none of `shapes`' rules.
GemmConfig NotTheRuleOfAny(const Context& device, const std::vector<GemmArgs>& shapes) {
  for (const GemmConfig& c : GemmConfigFamily()) {
    bool fits = true;
    for (const GemmArgs& args : shapes)
      fits = fits && c.Supports(args.trans_a, args.trans_b) &&
             c.Name() != RuleGemmConfig(device, args).Name();
    if (fits) return c;
  }
  ADD_FAILURE() << "every configuration is some shape's rule";
  return GemmConfig();
}

// The same shape in another math or with 16-bit operands runs other kernels
// (a matrix engine's form; 16-bit loads): a winner timed on one is not
// handed to the others, and each keeps its own.
TEST(GemmTuning, TheMathAndStorageTypesAreInTheKey) {
  CacheDir();
  const Context& device = TestContext();
  const GemmArgs float_math = Shape(71, 73, 79, true, false);
  std::vector<GemmArgs> others;
  for (MatrixMath math : {MatrixMath::kTF32, MatrixMath::kFloat16, MatrixMath::kBFloat16}) {
    others.push_back(float_math);
    others.back().math = math;
  }
  GemmArgs half_a = float_math;
  half_a.a_type = StorageType::kFloat16;
  others.push_back(half_a);
  GemmArgs bf16_c = float_math;
  bf16_c.c_type = StorageType::kBFloat16;
  others.push_back(bf16_c);
  std::vector<GemmArgs> all = others;
  all.push_back(float_math);
  const GemmConfig winner = NotTheRuleOfAny(device, all);
  StoreTunedGemmConfigs(device, {{ShapeKeyOf(float_math), winner}});
  EXPECT_EQ(ChooseGemmConfig(device, float_math).Name(), winner.Name());
  for (const GemmArgs& other : others)
    EXPECT_EQ(ChooseGemmConfig(device, other).Name(), RuleGemmConfig(device, other).Name())
        << ShapeKeyOf(other).Text();
  // A winner of its own for float16 math, beside float32's.
  const GemmConfig half_winner = NotTheRuleOfAny(device, {others[1]});
  StoreTunedGemmConfigs(device, {{ShapeKeyOf(others[1]), half_winner}});
  EXPECT_EQ(ChooseGemmConfig(device, others[1]).Name(), half_winner.Name());
  EXPECT_EQ(ChooseGemmConfig(device, float_math).Name(), winner.Name());
  const std::string text = ReadFileBytes(GemmTuningFile(device));
  EXPECT_NE(text.find("71 73 79 1 0 0 1 float16 float32 float32 float32 | " + half_winner.Name()),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("71 73 79 1 0 0 1 float32 float32 float32 float32 | " + winner.Name()),
            std::string::npos)
      << text;
}

// A file written before the key held the math and storage types: its
// entries are float32 math on float32 operands, the only products they are
// handed to; the next store rewrites them in the new format. A key with
// unknown type names is skipped.
TEST(GemmTuning, OldFilesKeysAreFloat32Products) {
  CacheDir();
  const Context& device = TestContext();
  const std::string path = GemmTuningFile(device);
  const GemmArgs old = Shape(83, 89, 97, false, false);
  GemmArgs old_tf32 = old, old_half = old;
  old_tf32.math = MatrixMath::kTF32;
  old_half.b_type = StorageType::kFloat16;
  const GemmConfig winner = NotTheRuleOfAny(device, {old, old_tf32, old_half});
  auto entry = [](const std::string& key, const std::string& config) {
    const std::string line = key + " | " + config;
    char checksum[20];
    std::snprintf(checksum, sizeof(checksum), "%016llx",
                  static_cast<unsigned long long>(Fnv1a(line)));
    return line + " | " + checksum + "\n";
  };
  WriteFileAtomically(path, "# dlcaffe GEMM tuning\n" + entry("83 89 97 0 0 0 1", winner.Name()) +
                                entry("83 89 98 0 0 0 1 float64 float32 float32 float32",
                                      winner.Name()) +
                                "# end: 2 entries\n");
  // A store merges with what the file holds (and makes the tables re-read it).
  const GemmArgs added = Shape(101, 103, 107, false, false);
  StoreTunedGemmConfigs(device, {{ShapeKeyOf(added), NotTheRule(device, added)}});
  EXPECT_EQ(ChooseGemmConfig(device, old).Name(), winner.Name());
  EXPECT_EQ(ChooseGemmConfig(device, old_tf32).Name(), RuleGemmConfig(device, old_tf32).Name());
  EXPECT_EQ(ChooseGemmConfig(device, old_half).Name(), RuleGemmConfig(device, old_half).Name());
  const std::string rewritten = ReadFileBytes(path);
  EXPECT_NE(rewritten.find("83 89 97 0 0 0 1 float32 float32 float32 float32 | " +
                           winner.Name()),
            std::string::npos)
      << rewritten;
  EXPECT_EQ(rewritten.find("83 89 98"), std::string::npos) << rewritten;
}

TEST(GemmTuning, RecordingKeepsOneProductPerShape) {
  CacheDir();
  Context& ctx = TestContext();
  BufferPtr buffer = ctx.Allocate(sizeof(float) * 64);
  GemmArgs g = Shape(3, 4, 5, false, false);
  g.A = g.B = g.C = buffer->mem();
  g.c_offset = 40;
  GemmRecording recording(ctx);
  EXPECT_EQ(ctx.gemm_recording(), &recording);
  Gemm(ctx, g);
  Gemm(ctx, g);
  GemmArgs transposed = g;
  transposed.trans_b = Transpose::kYes;
  Gemm(ctx, transposed);
  // Another math is another product, as the tuner times it.
  GemmArgs tf32 = g;
  tf32.math = MatrixMath::kTF32;
  Gemm(ctx, tf32);
  ASSERT_EQ(recording.products().size(), 3u);
  EXPECT_EQ(recording.products()[0].c_offset, 40u);
  EXPECT_EQ(recording.products()[1].trans_b, Transpose::kYes);
  EXPECT_EQ(recording.products()[2].math, MatrixMath::kTF32);
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
