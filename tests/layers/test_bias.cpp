#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// y[i] = x[i] + b[j], j = (i / inner) % dim.
std::vector<double> Reference(const std::vector<float>& x, const std::vector<float>& b,
                              int inner) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = double(x[i]) + b[(i / inner) % b.size()];
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-6) << i;
}

const std::vector<int> kInput{2, 3, 4, 5};

struct Case {
  std::string param;
  std::vector<int> bias_shape;
  int inner;
};

// The same cases serve bottom[1] (its shape) and learned blobs (param).
const Case kCases[] = {
    {"", {3}, 20},
    {"axis: 1 num_axes: 2", {3, 4}, 5},
    {"axis: 0 num_axes: -1", {2, 3, 4, 5}, 1},
    {"num_axes: 0", {}, 1},
    {"axis: -2 num_axes: 2", {4, 5}, 1},
    {"axis: 0 num_axes: 1", {2}, 60},
};

// Every test runs with both kernel shapes (channel_sums.hpp: work-items over
// contiguous runs, or over values and work-groups), whatever this device
// would pick.
class BiasTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { SetTestOption("kernel_shape", GetParam()); }
  void TearDown() override { ResetTestOption("kernel_shape"); }
};

}  // namespace

TEST_P(BiasTest, ForwardWithBiasFromBottom) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.param);
    Blob x(TestContext(), kInput), b(TestContext(), c.bias_shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 1);
    FillGaussian(&b, 0.f, 1.f, 2);
    auto layer = MakeLayer("type: 'Bias' bias_param { " + c.param + " }");
    layer->SetUp({&x, &b}, {&y});
    EXPECT_TRUE(layer->blobs().empty());
    layer->Forward({&x, &b}, {&y});
    ExpectNear(y.ReadData(), Reference(x.ReadData(), b.ReadData(), c.inner));
  }
}

TEST_P(BiasTest, LearnedBiasShapesAndFiller) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.param);
    Blob x(TestContext(), kInput), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 3);
    auto layer = MakeLayer("type: 'Bias' bias_param { " + c.param + " }");
    layer->SetUp({&x}, {&y});
    ASSERT_EQ(layer->blobs().size(), 1u);
    EXPECT_EQ(layer->blobs()[0]->shape(), c.bias_shape);
    for (float v : layer->blobs()[0]->ReadData()) EXPECT_EQ(v, 0.f);  // default filler
    auto filled = MakeLayer("type: 'Bias' bias_param { " + c.param +
                            " filler { type: 'uniform' min: 1 max: 2 } }");
    filled->SetUp({&x}, {&y});
    filled->Forward({&x}, {&y});
    std::vector<float> b = filled->blobs()[0]->ReadData();
    for (float v : b) EXPECT_TRUE(v >= 1.f && v <= 2.f) << v;
    ExpectNear(y.ReadData(), Reference(x.ReadData(), b, c.inner));
  }
}

TEST_P(BiasTest, GradientMatchesNumeric) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.param);
    Blob x(TestContext(), kInput), b(TestContext(), c.bias_shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 4);
    FillGaussian(&b, 0.f, 1.f, 5);
    GradientCheckOptions options;
    options.max_checks_per_blob = 40;
    auto from_bottom = MakeLayer("type: 'Bias' bias_param { " + c.param + " }");
    from_bottom->SetUp({&x, &b}, {&y});
    CheckGradient(*from_bottom, {&x, &b}, {&y}, {}, options);
    auto learned = MakeLayer("type: 'Bias' bias_param { " + c.param +
                             " filler { type: 'gaussian' } }");
    learned->SetUp({&x}, {&y});
    CheckGradient(*learned, {&x}, {&y}, {}, options);
  }
}

// In place the input gradient is the top gradient itself; the learned bias
// accumulates its gradient.
TEST_P(BiasTest, InPlaceAndAccumulation) {
  Blob x(TestContext(), kInput);
  FillGaussian(&x, 0.f, 1.f, 6);
  const std::vector<float> x0 = x.ReadData();
  auto layer = MakeLayer("type: 'Bias' bias_param { filler { type: 'gaussian' } }");
  layer->SetUp({&x}, {&x});
  layer->Forward({&x}, {&x});
  ExpectNear(x.ReadData(), Reference(x0, layer->blobs()[0]->ReadData(), 20));
  std::vector<float> dy(x.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.1f * float(i % 7);
  x.WriteDiff(dy);
  layer->blobs()[0]->SetDiff(1.f);
  layer->Backward({&x}, {true}, {&x});
  EXPECT_EQ(x.ReadDiff(), dy);
  std::vector<float> db = layer->blobs()[0]->ReadDiff();
  for (int j = 0; j < 3; ++j) {
    double sum = 1.0;
    for (int n = 0; n < 2; ++n)
      for (int p = 0; p < 20; ++p) sum += dy[(n * 3 + j) * 20 + p];
    EXPECT_NEAR(db[j], sum, 1e-5);
  }
}

// bottom[1]'s gradient is written (as any bottom's), not accumulated.
TEST_P(BiasTest, BottomBiasGradientIsOverwritten) {
  Blob x(TestContext(), {2, 3, 4}), b(TestContext(), {3}), y(TestContext());
  FillGaussian(&x, 0.f, 1.f, 7);
  FillGaussian(&b, 0.f, 1.f, 8);
  auto layer = MakeLayer("type: 'Bias'");
  layer->SetUp({&x, &b}, {&y});
  layer->Forward({&x, &b}, {&y});
  std::vector<float> dy(y.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.5f * float(i % 5) - 1.f;
  y.WriteDiff(dy);
  b.SetDiff(100.f);
  for (int pass = 0; pass < 2; ++pass) {
    layer->Backward({&y}, {false, true}, {&x, &b});
    const std::vector<float> db = b.ReadDiff();
    for (int j = 0; j < 3; ++j) {
      double sum = 0;
      for (int n = 0; n < 2; ++n)
        for (int p = 0; p < 4; ++p) sum += dy[(n * 3 + j) * 4 + p];
      EXPECT_NEAR(db[j], sum, 1e-5) << "pass " << pass;
    }
  }
}

// Inputs of many values: rows of 1517 over several work-items of the CPU
// shape, per channel and one scalar over the whole blob; the bias's gradient
// against the reference sums.
TEST_P(BiasTest, LargeInputs) {
  const std::vector<int> shape{3, 5, 37, 41};
  for (const char* param : {"axis: 1 num_axes: 1", "num_axes: 0"}) {
    SCOPED_TRACE(param);
    Blob x(TestContext(), shape), y(TestContext());
    FillGaussian(&x, 0.f, 1.f, 9);
    auto layer = MakeLayer(std::string("type: 'Bias' bias_param { ") + param +
                           " filler { type: 'gaussian' } }");
    layer->SetUp({&x}, {&y});
    const std::vector<float> b = layer->blobs()[0]->ReadData();
    const int dim = static_cast<int>(b.size()), inner = dim == 1 ? 1 : 37 * 41;
    layer->Forward({&x}, {&y});
    ExpectNear(y.ReadData(), Reference(x.ReadData(), b, inner));
    // db = sum(dy) per bias value.
    std::vector<float> dy(y.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.01f * float(i % 101) - 0.5f;
    y.WriteDiff(dy);
    layer->blobs()[0]->SetDiff(0.f);
    layer->Backward({&y}, {true}, {&x});
    std::vector<double> db(dim), magnitude(dim);
    for (size_t i = 0; i < dy.size(); ++i) {
      db[(i / inner) % dim] += dy[i];
      magnitude[(i / inner) % dim] += std::fabs(dy[i]);
    }
    const std::vector<float> got_db = layer->blobs()[0]->ReadDiff();
    for (int j = 0; j < dim; ++j) EXPECT_NEAR(got_db[j], db[j], 1e-5 * magnitude[j]);
    GradientCheckOptions options;
    options.max_checks_per_blob = 40;
    CheckGradient(*layer, {&x}, {&y}, {}, options);
  }
}

TEST_P(BiasTest, ShapeErrors) {
  Blob x(TestContext(), kInput), y(TestContext());
  Blob wrong(TestContext(), {4});
  EXPECT_THROW(MakeLayer("type: 'Bias'")->SetUp({&x, &wrong}, {&y}), Error);
  EXPECT_THROW(MakeLayer("type: 'Bias' bias_param { axis: 4 }")->SetUp({&x}, {&y}), Error);
  EXPECT_THROW(MakeLayer("type: 'Bias' bias_param { axis: 2 num_axes: 3 }")->SetUp({&x}, {&y}),
               Error);
}

INSTANTIATE_TEST_SUITE_P(KernelShapes, BiasTest, ::testing::Values("cpu", "gpu"));

}  // namespace test
}  // namespace dlcaffe
