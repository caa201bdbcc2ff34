#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

LayerEpilogue ReluEpilogue() {
  LayerEpilogue epilogue;
  epilogue.relu = true;
  return epilogue;
}

// y[i] = x[i] * s[j] (+ b[j]) with j = (i / inner) % dim, inner = product of
// the input axes after axis + the scale's axes.
std::vector<double> Reference(const std::vector<float>& x, const std::vector<float>& s,
                              const std::vector<float>* b, int inner) {
  std::vector<double> y(x.size());
  const int dim = static_cast<int>(s.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int j = (i / inner) % dim;
    y[i] = double(x[i]) * s[j] + (b ? (*b)[j] : 0.0);
  }
  return y;
}

int Inner(const std::vector<int>& shape, int axis, int scale_axes) {
  int inner = 1;
  for (size_t i = axis + scale_axes; i < shape.size(); ++i) inner *= shape[i];
  return inner;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5) << i;
}

const std::vector<int> kInput{2, 3, 4, 5};

struct BottomCase {
  std::vector<int> scale_shape;
  int axis;  // as written in the prototxt
  int canonical_axis;
};

// Scales given as bottom[1], at several axes (num_axes does not apply).
const BottomCase kBottomCases[] = {
    {{3}, 1, 1},           {{3, 4}, 1, 1}, {{2, 3, 4, 5}, 0, 0},  // eltwise
    {{}, 1, 0},                                                 // a scalar
    {{4, 5}, -2, 2},       {{2}, 0, 0},    {{5}, -1, 3},
};

struct LearnedCase {
  int axis, num_axes;
  std::vector<int> blob_shape;
  int canonical_axis;
};

const LearnedCase kLearnedCases[] = {
    {1, 1, {3}, 1},       {1, -1, {3, 4, 5}, 1}, {1, 0, {}, 0},
    {0, 2, {2, 3}, 0},    {-1, 1, {5}, 3},       {2, 2, {4, 5}, 2},
};

std::string LearnedProto(const LearnedCase& c, const std::string& extra = "") {
  return "type: 'Scale' scale_param { axis: " + std::to_string(c.axis) +
         " num_axes: " + std::to_string(c.num_axes) + " " + extra + " }";
}

// Every test runs with both kernel shapes (channel_sums.hpp: work-items over
// contiguous runs, or over values and work-groups), whatever this device
// would pick.
class ScaleTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

}  // namespace

TEST_P(ScaleTest, ForwardWithScaleFromBottom) {
  for (const BottomCase& c : kBottomCases) {
    SCOPED_TRACE(::testing::PrintToString(c.scale_shape));
    Blob x(TestContext(), kInput), s(TestContext(), c.scale_shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 1);
    FillGaussian(&s, 1.f, 1.f, 2);
    auto layer = MakeLayer("type: 'Scale' scale_param { axis: " + std::to_string(c.axis) + " }");
    layer->SetUp({&x, &s}, {&y});
    EXPECT_TRUE(layer->blobs().empty());
    ASSERT_EQ(y.shape(), kInput);
    layer->Forward({&x, &s}, {&y});
    ExpectNear(y.ReadData(), Reference(x.ReadData(), s.ReadData(), nullptr,
                                       Inner(kInput, c.canonical_axis, (int)c.scale_shape.size())));
  }
}

// A learned scale is shaped by axis/num_axes and defaults to 1 (identity).
TEST_P(ScaleTest, LearnedScaleShapesAndDefaultFiller) {
  for (const LearnedCase& c : kLearnedCases) {
    SCOPED_TRACE(LearnedProto(c));
    Blob x(TestContext(), kInput), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 3);
    auto layer = MakeLayer(LearnedProto(c));
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(layer->blobs().size(), 1u);
    EXPECT_EQ(layer->blobs()[0]->shape(), c.blob_shape);
    for (float v : layer->blobs()[0]->ReadData()) EXPECT_EQ(v, 1.f);
    layer->Forward({&x}, {&y});
    EXPECT_EQ(y.ReadData(), x.ReadData());
    // Any values: the broadcast follows the blob's axes.
    FillGaussian(layer->blobs()[0].get(), 0.f, 2.f, 4);
    layer->Forward({&x}, {&y});
    ExpectNear(y.ReadData(), Reference(x.ReadData(), layer->blobs()[0]->ReadData(), nullptr,
                                       Inner(kInput, c.canonical_axis, (int)c.blob_shape.size())));
  }
}

// bias_term adds Caffe's internal Bias layer: blobs [scale, bias], or [bias]
// when the scale is bottom[1]; bias_filler fills it.
TEST_P(ScaleTest, BiasTerm) {
  Blob x(TestContext(), kInput), y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 5);
  auto layer = MakeLayer(
      "type: 'Scale' scale_param { bias_term: true filler { type: 'constant' value: 2 } "
      "bias_filler { type: 'constant' value: 0.5 } }");
  layer->SetUp({&x}, {&y});
  ASSERT_EQ(layer->blobs().size(), 2u);
  EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{3});
  layer->Forward({&x}, {&y});
  std::vector<float> s(3, 2.f), b(3, 0.5f);
  ExpectNear(y.ReadData(), Reference(x.ReadData(), s, &b, 20));

  Blob s2(TestContext(), {3, 4});
  FillGaussian(&s2, 0.f, 1.f, 6);
  auto with_bottom = MakeLayer("type: 'Scale' scale_param { bias_term: true bias_filler { type: 'gaussian' } }");
  with_bottom->SetUp({&x, &s2}, {&y});
  ASSERT_EQ(with_bottom->blobs().size(), 1u);
  EXPECT_EQ(with_bottom->blobs()[0]->shape(), (std::vector<int>{3, 4}));
  with_bottom->Forward({&x, &s2}, {&y});
  std::vector<float> bias = with_bottom->blobs()[0]->ReadData();
  ExpectNear(y.ReadData(), Reference(x.ReadData(), s2.ReadData(), &bias, 5));
}

TEST_P(ScaleTest, GradientWithScaleFromBottom) {
  for (const BottomCase& c : kBottomCases) {
    SCOPED_TRACE(::testing::PrintToString(c.scale_shape));
    Blob x(TestContext(), kInput), s(TestContext(), c.scale_shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 7);
    FillGaussian(&s, 0.f, 1.f, 8);
    auto layer = MakeLayer("type: 'Scale' scale_param { axis: " + std::to_string(c.axis) + " }");
    layer->SetUp({&x, &s}, {&y});
    GradientCheckOptions options;
    options.max_checks_per_blob = 40;
    CheckGradient(*layer, {&x, &s}, {&y}, {}, options);
  }
}

TEST_P(ScaleTest, GradientWithLearnedScaleAndBias) {
  for (const LearnedCase& c : kLearnedCases) {
    for (bool bias : {false, true}) {
      const std::string proto = LearnedProto(
          c, std::string("filler { type: 'gaussian' }") + (bias ? " bias_term: true bias_filler { type: 'gaussian' }" : ""));
      SCOPED_TRACE(proto);
      Blob x(TestContext(), kInput), y(TestContext());
      FillGaussian(&x, 0.f, 1.f, 9);
      auto layer = MakeLayer(proto);
      layer->SetUp({&x}, {&y});
      ASSERT_EQ(layer->blobs().size(), bias ? 2u : 1u);
      GradientCheckOptions options;
      options.max_checks_per_blob = 40;
      CheckGradient(*layer, {&x}, {&y}, {}, options);
    }
  }
}

// bottom[1] + bias_term: gradients for both bottoms and the bias blob.
TEST_P(ScaleTest, GradientWithScaleFromBottomAndBias) {
  Blob x(TestContext(), {3, 2, 5}), s(TestContext(), {2}), y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 10);
  FillGaussian(&s, 0.f, 1.f, 11);
  auto layer = MakeLayer("type: 'Scale' scale_param { bias_term: true bias_filler { type: 'gaussian' } }");
  layer->SetUp({&x, &s}, {&y});
  CheckGradient(*layer, {&x, &s}, {&y});
}

// In place (the common BatchNorm -> Scale pattern): the same results as out
// of place; parameter gradients accumulate, bottom[1]'s is overwritten.
TEST_P(ScaleTest, InPlaceAndAccumulation) {
  const std::string proto =
      "type: 'Scale' scale_param { filler { type: 'gaussian' } bias_term: true "
      "bias_filler { type: 'gaussian' } }";
  Blob x(TestContext(), kInput), y(TestContext()), inplace(TestContext(), kInput);
  FillGaussian(&x, 0.f, 1.f, 12);
  inplace.WriteData(x.ReadData());
  auto layer = MakeLayer(proto);
  auto layer_in_place = MakeLayer(proto);
  layer->SetUp({&x}, {&y});
  layer_in_place->SetUp({&inplace}, {&inplace});
  for (int p = 0; p < 2; ++p) {
    layer_in_place->blobs()[p]->WriteData(layer->blobs()[p]->ReadData());
    layer->blobs()[p]->SetDiff(0.f);
    layer_in_place->blobs()[p]->SetDiff(0.f);
  }
  layer->Forward({&x}, {&y});
  layer_in_place->Forward({&inplace}, {&inplace});
  EXPECT_EQ(inplace.ReadData(), y.ReadData());
  std::vector<float> dy(x.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.05f * float(i % 17) - 0.4f;
  y.WriteDiff(dy);
  inplace.WriteDiff(dy);
  layer->Backward({&y}, {true}, {&x});
  layer_in_place->Backward({&inplace}, {true}, {&inplace});
  std::vector<float> dx_out = x.ReadDiff(), dx_in = inplace.ReadDiff();
  for (size_t i = 0; i < dx_out.size(); ++i) EXPECT_FLOAT_EQ(dx_in[i], dx_out[i]) << i;
  std::vector<std::vector<float>> once;
  for (int p = 0; p < 2; ++p) {
    once.push_back(layer->blobs()[p]->ReadDiff());
    std::vector<float> in_place = layer_in_place->blobs()[p]->ReadDiff();
    for (size_t i = 0; i < in_place.size(); ++i) EXPECT_NEAR(in_place[i], once[p][i], 1e-5);
  }
  layer->Backward({&y}, {true}, {&x});  // parameter gradients accumulate
  for (int p = 0; p < 2; ++p) {
    std::vector<float> twice = layer->blobs()[p]->ReadDiff();
    for (size_t i = 0; i < twice.size(); ++i)
      EXPECT_NEAR(twice[i], 2 * once[p][i], 1e-5 * (1 + std::fabs(once[p][i]))) << p;
  }

  Blob s(TestContext(), {3});
  FillGaussian(&s, 0.f, 1.f, 13);
  auto with_bottom = MakeLayer("type: 'Scale'");
  with_bottom->SetUp({&x, &s}, {&y});
  with_bottom->Forward({&x, &s}, {&y});
  y.WriteDiff(dy);
  with_bottom->Backward({&y}, {false, true}, {&x, &s});
  std::vector<float> first = s.ReadDiff();
  with_bottom->Backward({&y}, {false, true}, {&x, &s});
  EXPECT_EQ(s.ReadDiff(), first);
}

// Inputs of many values: rows of 1517 over several work-items of the CPU
// shape, per channel (in place with a bias, as after BatchNorm) and one
// scalar over the whole blob. Every value of the forward and backward passes
// is compared with the reference.
TEST_P(ScaleTest, LargeInputs) {
  const std::vector<int> shape{3, 5, 37, 41};
  for (const char* param : {"axis: 1 num_axes: 1", "num_axes: 0"}) {
    for (bool in_place : {false, true}) {
      const std::string proto = std::string("type: 'Scale' scale_param { ") + param +
                                " filler { type: 'gaussian' } bias_term: true "
                                "bias_filler { type: 'gaussian' } }";
      SCOPED_TRACE(proto + (in_place ? " in place" : ""));
      Blob x(TestContext(), shape), y(TestContext());
      FillGaussian(&x, 0.f, 1.f, 14);
      const std::vector<float> x0 = x.ReadData();
      auto layer = MakeLayer(proto);
      Blob* top = in_place ? &x : &y;
      layer->SetUp({&x}, {top});
      const std::vector<float> s = layer->blobs()[0]->ReadData();
      const std::vector<float> b = layer->blobs()[1]->ReadData();
      const int dim = static_cast<int>(s.size()), inner = dim == 1 ? 1 : 37 * 41;
      // A fused ReLU clamps the values at 0.
      layer->set_epilogue(ReluEpilogue());
      layer->Forward({&x}, {top});
      std::vector<double> clamped = Reference(x0, s, &b, inner);
      for (double& v : clamped) v = std::max(v, 0.0);
      ExpectNear(top->ReadData(), clamped);
      layer->set_epilogue({});
      x.WriteData(x0);
      layer->Forward({&x}, {top});
      ExpectNear(top->ReadData(), Reference(x0, s, &b, inner));

      // dx = dy * s; ds = sum(dy * x), db = sum(dy) per scale value.
      std::vector<float> dy(x.count());
      for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.01f * float(i % 101) - 0.5f;
      top->WriteDiff(dy);
      layer->blobs()[0]->SetDiff(0.f);
      layer->blobs()[1]->SetDiff(0.f);
      layer->Backward({top}, {true}, {&x});
      std::vector<double> dx(dy.size()), ds(dim), db(dim), magnitude(dim);
      for (size_t i = 0; i < dy.size(); ++i) {
        const int j = (i / inner) % dim;
        dx[i] = double(dy[i]) * s[j];
        ds[j] += double(dy[i]) * x0[i];
        db[j] += dy[i];
        magnitude[j] += std::fabs(double(dy[i]) * x0[i]) + std::fabs(dy[i]);
      }
      ExpectNear(x.ReadDiff(), dx);
      const std::vector<float> got_ds = layer->blobs()[0]->ReadDiff();
      const std::vector<float> got_db = layer->blobs()[1]->ReadDiff();
      for (int j = 0; j < dim; ++j) {
        EXPECT_NEAR(got_ds[j], ds[j], 1e-5 * magnitude[j]);
        EXPECT_NEAR(got_db[j], db[j], 1e-5 * magnitude[j]);
      }
      if (in_place) continue;  // the gradient checker needs distinct blobs
      GradientCheckOptions options;
      options.max_checks_per_blob = 40;
      CheckGradient(*layer, {&x}, {&y}, {}, options);
    }
  }
}

TEST_P(ScaleTest, ShapeErrors) {
  Blob x(TestContext(), kInput), y(TestContext());
  Blob wrong(TestContext(), {4});
  EXPECT_THROW(MakeLayer("type: 'Scale'")->SetUp({&x, &wrong}, {&y}), Error);
  Blob too_long(TestContext(), {4, 5, 6});
  EXPECT_THROW(MakeLayer("type: 'Scale' scale_param { axis: 2 }")->SetUp({&x, &too_long}, {&y}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'Scale' scale_param { axis: 3 num_axes: 2 }")->SetUp({&x}, {&y}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'Scale' scale_param { num_axes: -2 }")->SetUp({&x}, {&y}), Error);
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, ScaleTest, ::testing::Values("cpu", "gpu"));

}  // namespace test
}  // namespace dlcaffe
