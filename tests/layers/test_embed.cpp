#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kInputDim = 11, kNumOutput = 7;

std::string EmbedProto(bool bias) {
  return std::string("type: 'Embed' embed_param { num_output: 7 input_dim: 11 bias_term: ") +
         (bias ? "true" : "false") +
         " weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }";
}

void FillIndices(Blob* indices, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(indices->count());
  for (float& x : v) x = float(rng() % kInputDim);
  indices->WriteData(v);
}

}  // namespace

TEST(Embed, ForwardLooksUpRows) {
  for (bool bias : {false, true})
    for (const std::vector<int>& shape :
         {std::vector<int>{4}, std::vector<int>{2, 3}, std::vector<int>{13, 1}, std::vector<int>{1}}) {
      SCOPED_TRACE(EmbedProto(bias) + " " + ::testing::PrintToString(shape));
      Blob indices(TestContext(), shape), top(TestContext());
      FillIndices(&indices, 1);
      auto layer = MakeLayer(EmbedProto(bias));
      layer->SetUp({&indices}, {&top});
      ASSERT_EQ(layer->blobs().size(), bias ? 2u : 1u);
      EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{kInputDim, kNumOutput}));
      std::vector<int> top_shape = shape;
      top_shape.push_back(kNumOutput);
      ASSERT_EQ(top.shape(), top_shape);
      layer->Forward({&indices}, {&top});
      const std::vector<float> w = layer->blobs()[0]->ReadData();
      const std::vector<float> b =
          bias ? layer->blobs()[1]->ReadData() : std::vector<float>(kNumOutput, 0.f);
      const std::vector<float> idx = indices.ReadData(), y = top.ReadData();
      for (size_t m = 0; m < idx.size(); ++m)
        for (int d = 0; d < kNumOutput; ++d)
          ASSERT_FLOAT_EQ(y[m * kNumOutput + d], w[int(idx[m]) * kNumOutput + d] + b[d]);
    }
}

TEST(Embed, ParameterGradientMatchesNumeric) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(EmbedProto(bias));
    Blob indices(TestContext(), {3, 5}), top(TestContext());
    FillIndices(&indices, 2);
    auto layer = MakeLayer(EmbedProto(bias));
    layer->SetUp({&indices}, {&top});
    GradientCheckOptions params_only;  // the indices take no gradient
    params_only.check_bottoms = false;
    CheckGradient(*layer, {&indices}, {&top}, {}, params_only);
  }
}

// Rows used several times get the sum of their gradients, added to what the
// diffs held (parameter gradients accumulate).
TEST(Embed, RepeatedIndicesAccumulate) {
  Blob indices(TestContext(), {7}), top(TestContext());
  indices.WriteData({2.f, 5.f, 2.f, 2.f, 0.f, 5.f, 10.f});
  auto layer = MakeLayer(EmbedProto(true));
  layer->SetUp({&indices}, {&top});
  layer->Forward({&indices}, {&top});
  std::vector<float> dy(top.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 9) - 1.f;
  top.WriteDiff(dy);
  layer->blobs()[0]->SetDiff(0.5f);
  layer->blobs()[1]->SetDiff(-1.f);
  layer->Backward({&top}, {false}, {&indices});
  std::vector<double> dw(kInputDim * kNumOutput, 0.5), db(kNumOutput, -1.0);
  const std::vector<float> idx = indices.ReadData();
  for (size_t m = 0; m < idx.size(); ++m)
    for (int d = 0; d < kNumOutput; ++d) {
      dw[int(idx[m]) * kNumOutput + d] += dy[m * kNumOutput + d];
      db[d] += dy[m * kNumOutput + d];
    }
  const std::vector<float> got_w = layer->blobs()[0]->ReadDiff(), got_b = layer->blobs()[1]->ReadDiff();
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(got_w[i], dw[i], 1e-6) << i;
  for (size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(got_b[i], db[i], 1e-6) << i;
}

// An index outside [0, input_dim) or not an integer makes that pass's rows
// NaN; a later forward pass throws, and the layer works again once fixed.
TEST(Embed, BadIndexIsAUserError) {
  for (float bad : {11.f, -1.f, 2.5f}) {
    SCOPED_TRACE(bad);
    Blob indices(TestContext(), {4}), top(TestContext());
    indices.WriteData({0.f, 3.f, bad, 10.f});
    auto layer = MakeLayer(EmbedProto(true));
    layer->SetUp({&indices}, {&top});
    layer->Forward({&indices}, {&top});
    const std::vector<float> y = top.ReadData();
    EXPECT_TRUE(std::isnan(y[2 * kNumOutput]));
    EXPECT_FALSE(std::isnan(y[3 * kNumOutput]));
    try {
      layer->Forward({&indices}, {&top});
      ADD_FAILURE() << "no error for index " << bad;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("not an integer in [0, 11)"), std::string::npos) << message;
      EXPECT_NE(message.find("position 2"), std::string::npos) << message;
    }
    indices.WriteData({0.f, 3.f, 4.f, 10.f});
    layer->Forward({&indices}, {&top});
    for (float v : top.ReadData()) EXPECT_FALSE(std::isnan(v));
    EXPECT_NO_THROW(layer->Forward({&indices}, {&top}));
  }
}

TEST(Embed, NoGradientToIndicesAndParameterErrors) {
  Blob indices(TestContext(), {3}), top(TestContext());
  FillIndices(&indices, 3);
  auto layer = MakeLayer(EmbedProto(false));
  layer->SetUp({&indices}, {&top});
  EXPECT_FALSE(layer->AllowForceBackward(0));
  layer->Forward({&indices}, {&top});
  EXPECT_THROW(layer->Backward({&top}, {true}, {&indices}), Error);
  EXPECT_THROW(MakeLayer("type: 'Embed' embed_param { input_dim: 3 }")->SetUp({&indices}, {&top}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'Embed' embed_param { num_output: 3 }")->SetUp({&indices}, {&top}),
               Error);
}

}  // namespace test
}  // namespace dlcaffe
