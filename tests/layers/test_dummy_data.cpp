#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string LayerText(const std::string& param) {
  return "name: 'dummy' type: 'DummyData' dummy_data_param { " + param + " }";
}

double Mean(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += x;
  return sum / v.size();
}

double Variance(const std::vector<float>& v) {
  const double mean = Mean(v);
  double sum = 0;
  for (float x : v) sum += (x - mean) * (x - mean);
  return sum / v.size();
}

// Sets up a one-top layer with `filler` on a blob of `shape` and returns the
// top's values after setup and after two Forwards.
struct Fills {
  std::vector<float> setup, first, second;
};
Fills RunFiller(const std::string& filler, const std::string& shape, Blob* top) {
  TestContext().Seed(77);
  auto layer = MakeLayer(LayerText("data_filler { " + filler + " } shape { " + shape + " }"));
  layer->SetUp({}, {top});
  Fills fills;
  fills.setup = top->ReadData();
  layer->Forward({}, {top});
  fills.first = top->ReadData();
  layer->Forward({}, {top});
  fills.second = top->ReadData();
  return fills;
}

}  // namespace

TEST(DummyDataLayer, DefaultFillerIsConstantZeroAndFilledOnce) {
  Blob top(TestContext());
  top.Reshape({2, 3, 4});
  top.SetData(5.f);  // leftovers that setup must overwrite
  auto layer = MakeLayer(LayerText("shape { dim: 2 dim: 3 dim: 4 }"));
  layer->SetUp({}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(top.ReadData(), std::vector<float>(24, 0.f));
  // Forward does not refill a constant top (it costs nothing per pass): what
  // was written into it stays.
  top.SetData(7.f);
  layer->Forward({}, {&top});
  layer->Forward({}, {&top});
  EXPECT_EQ(top.ReadData(), std::vector<float>(24, 7.f));
}

TEST(DummyDataLayer, ConstantFillerValue) {
  Blob top(TestContext());
  auto layer =
      MakeLayer(LayerText("data_filler { type: 'constant' value: -2.5 } "
                          "shape { dim: 13 } "));
  layer->SetUp({}, {&top});
  EXPECT_EQ(top.ReadData(), std::vector<float>(13, -2.5f));
  top.SetData(1.f);
  layer->Forward({}, {&top});
  EXPECT_EQ(top.ReadData(), std::vector<float>(13, 1.f));
}

TEST(DummyDataLayer, UniformIsRefilledEveryForward) {
  Blob top(TestContext());
  const Fills f = RunFiller("type: 'uniform' min: -1 max: 3", "dim: 13 dim: 127", &top);
  EXPECT_EQ(top.shape(), (std::vector<int>{13, 127}));
  for (const auto* values : {&f.setup, &f.first, &f.second}) {
    for (float x : *values) {
      ASSERT_GE(x, -1.f);
      ASSERT_LT(x, 3.f);
    }
    // Mean 1, variance 16 / 12; 1651 draws: the mean's sd is 0.028.
    EXPECT_NEAR(Mean(*values), 1.0, 0.15);
    EXPECT_NEAR(Variance(*values), 16.0 / 12, 0.15);
  }
  EXPECT_NE(f.setup, f.first);
  EXPECT_NE(f.first, f.second);
  // Seeded: the same seed gives the same values.
  Blob again(TestContext());
  EXPECT_EQ(RunFiller("type: 'uniform' min: -1 max: 3", "dim: 13 dim: 127", &again).second,
            f.second);
}

TEST(DummyDataLayer, GaussianAndSparseGaussian) {
  Blob top(TestContext());
  const Fills f = RunFiller("type: 'gaussian' mean: 2 std: 0.5", "dim: 3 dim: 1000", &top);
  EXPECT_NEAR(Mean(f.first), 2.0, 0.05);
  EXPECT_NEAR(std::sqrt(Variance(f.first)), 0.5, 0.05);
  EXPECT_NE(f.first, f.second);

  // sparse: 3 of 13 outputs kept on average: about 10 / 13 zeros.
  const Fills s = RunFiller("type: 'gaussian' std: 1 sparse: 3", "dim: 13 dim: 200", &top);
  int zeros = 0;
  for (float x : s.first) zeros += x == 0.f;
  EXPECT_NEAR(zeros / 2600.0, 10.0 / 13, 0.04);
}

TEST(DummyDataLayer, XavierAndMsra) {
  Blob top(TestContext());
  // fan_in = count / num = 7 * 3 * 3 = 63.
  const Fills x = RunFiller("type: 'xavier'", "dim: 31 dim: 7 dim: 3 dim: 3", &top);
  const float bound = std::sqrt(3.f / 63);
  for (float v : x.first) {
    ASSERT_GE(v, -bound);
    ASSERT_LE(v, bound);
  }
  EXPECT_NEAR(Variance(x.first), 1.0 / 63, 0.1 / 63);
  EXPECT_NE(x.first, x.second);

  const Fills m = RunFiller("type: 'msra'", "dim: 31 dim: 7 dim: 3 dim: 3", &top);
  EXPECT_NEAR(Mean(m.first), 0.0, 0.02);
  EXPECT_NEAR(Variance(m.first), 2.0 / 63, 0.2 / 63);
  // variance_norm FAN_OUT: count / channels = 31 * 9 = 279.
  const Fills o =
      RunFiller("type: 'msra' variance_norm: FAN_OUT", "dim: 31 dim: 7 dim: 3 dim: 3", &top);
  EXPECT_NEAR(Variance(o.first), 2.0 / 279, 0.2 / 279);
}

TEST(DummyDataLayer, PositiveUnitball) {
  Blob top(TestContext());
  const Fills f = RunFiller("type: 'positive_unitball'", "dim: 5 dim: 3 dim: 7", &top);
  for (const auto* values : {&f.first, &f.second}) {
    for (int row = 0; row < 5; ++row) {
      double sum = 0;
      for (int j = 0; j < 21; ++j) {
        const float v = (*values)[row * 21 + j];
        ASSERT_GE(v, 0.f);
        ASSERT_LE(v, 1.f);
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
    }
  }
  EXPECT_NE(f.first, f.second);
}

TEST(DummyDataLayer, Bilinear) {
  Blob top(TestContext());
  const int K = 4;
  const Fills f = RunFiller("type: 'bilinear'", "dim: 2 dim: 1 dim: 4 dim: 4", &top);
  // Caffe's BilinearFiller for kernel 4 (factor 2): 1-D weights .25 .75 .75 .25.
  const float w1[K] = {0.25f, 0.75f, 0.75f, 0.25f};
  for (int n = 0; n < 2; ++n)
    for (int y = 0; y < K; ++y)
      for (int x = 0; x < K; ++x) EXPECT_FLOAT_EQ(f.first[(n * K + y) * K + x], w1[y] * w1[x]);
  EXPECT_EQ(f.first, f.second);
}

TEST(DummyDataLayer, FillerAndShapePerTop) {
  Blob a(TestContext()), b(TestContext()), c(TestContext());
  auto layer = MakeLayer(
      LayerText("data_filler { type: 'constant' value: 1 } data_filler { type: 'uniform' } "
                "data_filler { value: 3 } "  // no type: constant, as in Caffe
                "shape { dim: 2 } shape { dim: 3 dim: 1 } shape { dim: 1 dim: 1 dim: 5 }"));
  layer->SetUp({}, {&a, &b, &c});
  EXPECT_EQ(a.shape(), (std::vector<int>{2}));
  EXPECT_EQ(b.shape(), (std::vector<int>{3, 1}));
  EXPECT_EQ(c.shape(), (std::vector<int>{1, 1, 5}));
  EXPECT_EQ(a.ReadData(), std::vector<float>(2, 1.f));
  EXPECT_EQ(c.ReadData(), std::vector<float>(5, 3.f));
  a.SetData(-1.f);
  c.SetData(-3.f);
  const std::vector<float> b_setup = b.ReadData();
  layer->Forward({}, {&a, &b, &c});
  EXPECT_EQ(a.ReadData(), std::vector<float>(2, -1.f));
  EXPECT_EQ(c.ReadData(), std::vector<float>(5, -3.f));
  EXPECT_NE(b.ReadData(), b_setup);
  for (float x : b.ReadData()) {
    EXPECT_GE(x, 0.f);
    EXPECT_LT(x, 1.f);
  }
}

TEST(DummyDataLayer, OneFillerAndOneShapeForEveryTop) {
  Blob a(TestContext()), b(TestContext());
  auto layer = MakeLayer(
      LayerText("data_filler { type: 'uniform' min: 5 max: 6 } shape { dim: 3 dim: 127 }"));
  layer->SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{3, 127}));
  EXPECT_EQ(b.shape(), (std::vector<int>{3, 127}));
  layer->Forward({}, {&a, &b});
  const std::vector<float> va = a.ReadData(), vb = b.ReadData();
  EXPECT_NE(va, vb);  // each top drawn on its own
  for (const auto* values : {&va, &vb})
    for (float x : *values) {
      ASSERT_GE(x, 5.f);
      ASSERT_LT(x, 6.f);
    }
}

TEST(DummyDataLayer, LegacyDimensions) {
  Blob a(TestContext()), b(TestContext());
  // num once per top, the others once for both.
  auto layer = MakeLayer(
      LayerText("num: 2 num: 1 channels: 3 height: 13 width: 1 data_filler { value: 0.5 }"));
  layer->SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{2, 3, 13, 1}));
  EXPECT_EQ(b.shape(), (std::vector<int>{1, 3, 13, 1}));
  EXPECT_EQ(a.ReadData(), std::vector<float>(78, 0.5f));
  EXPECT_EQ(b.ReadData(), std::vector<float>(39, 0.5f));
}

TEST(DummyDataLayer, ClearErrors) {
  Blob a(TestContext()), b(TestContext()), c(TestContext());
  auto error_of = [&](const std::string& param, std::vector<Blob*> tops) {
    return ErrorOf([&] { MakeLayer(LayerText(param))->SetUp({}, tops); });
  };
  std::string error = error_of("data_filler {} data_filler {} shape { dim: 1 }", {&a, &b, &c});
  EXPECT_NE(error.find("layer 'dummy' (DummyData): "), std::string::npos) << error;
  EXPECT_NE(error.find("give data_filler 0 times, once or once per top (3); got 2"),
            std::string::npos)
      << error;
  error = error_of("shape { dim: 1 } shape { dim: 2 }", {&a, &b, &c});
  EXPECT_NE(error.find("give shape once or once per top (3); got 2"), std::string::npos) << error;
  error = error_of("", {&a});
  EXPECT_NE(error.find("give shape once or once per top (1); got 0"), std::string::npos) << error;
  error = error_of("shape { dim: 1 } num: 1 channels: 1 height: 1 width: 1", {&a});
  EXPECT_NE(error.find("either shape or the legacy"), std::string::npos) << error;
  error = error_of("num: 1 channels: 1 height: 1", {&a});
  EXPECT_NE(error.find("give width once or once per top (1) with the legacy fields; got 0"),
            std::string::npos)
      << error;
  error = error_of("shape { dim: 2 dim: -1 }", {&a});
  EXPECT_NE(error.find("top 0"), std::string::npos) << error;
  EXPECT_NE(error.find("-1"), std::string::npos) << error;
  // A bad filler is reported at setup, not at the first Forward.
  error = error_of("data_filler { type: 'nonsense' } shape { dim: 2 }", {&a});
  EXPECT_NE(error.find("data_filler 0 on top 0"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown filler type 'nonsense'"), std::string::npos) << error;
  error = error_of("data_filler { type: 'bilinear' } shape { dim: 2 dim: 3 }", {&a});
  EXPECT_NE(error.find("bilinear filler needs a 4-D blob"), std::string::npos) << error;
  error = ErrorOf([&] { MakeLayer(LayerText("shape { dim: 1 }"))->SetUp({&a}, {&b}); });
  EXPECT_NE(error.find("takes 0 bottom blob(s), got 1"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
