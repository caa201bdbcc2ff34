#include <gtest/gtest.h>

#include <cmath>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// One LSTM step on the host: gates i, f, o, g per stream, forget path gated
// by cont.
void ReferenceLSTMUnit(int num, int dim, const std::vector<float>& c_prev,
                       const std::vector<float>& gates, const std::vector<float>& cont,
                       std::vector<double>* c, std::vector<double>* h) {
  c->assign(num * dim, 0.0);
  h->assign(num * dim, 0.0);
  for (int n = 0; n < num; ++n) {
    for (int d = 0; d < dim; ++d) {
      const float* x = &gates[n * 4 * dim];
      const double i = Sigmoid(x[d]);
      const double f = cont[n] * Sigmoid(x[dim + d]);
      const double o = Sigmoid(x[2 * dim + d]);
      const double g = std::tanh(x[3 * dim + d]);
      const double c_t = f * c_prev[n * dim + d] + i * g;
      (*c)[n * dim + d] = c_t;
      (*h)[n * dim + d] = o * std::tanh(c_t);
    }
  }
}

struct UnitBlobs {
  UnitBlobs(int num, int dim)
      : c_prev(TestContext(), {1, num, dim}),
        gates(TestContext(), {1, num, 4 * dim}),
        cont(TestContext(), {1, num}),
        c(TestContext()),
        h(TestContext()) {}
  std::vector<Blob*> bottom() { return {&c_prev, &gates, &cont}; }
  std::vector<Blob*> top() { return {&c, &h}; }
  Blob c_prev, gates, cont, c, h;
};

// Streams alternate between continuing (1) and starting (0) a sequence.
std::vector<float> AlternatingCont(int num) {
  std::vector<float> cont(num);
  for (int n = 0; n < num; ++n) cont[n] = n % 2 == 0 ? 1.f : 0.f;
  return cont;
}

}  // namespace

class LSTMUnitTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(LSTMUnitTest, ForwardMatchesReference) {
  const int num = GetParam().first, dim = GetParam().second;
  UnitBlobs blobs(num, dim);
  FillGaussian(&blobs.c_prev, 0.f, 1.f, 3);
  FillGaussian(&blobs.gates, 0.f, 2.f, 4);
  blobs.cont.WriteData(AlternatingCont(num));
  auto layer = MakeLayer("type: 'LSTMUnit'");
  layer->SetUp(blobs.bottom(), blobs.top());
  ASSERT_EQ(blobs.c.shape(), blobs.c_prev.shape());
  ASSERT_EQ(blobs.h.shape(), blobs.c_prev.shape());
  layer->Forward(blobs.bottom(), blobs.top());
  std::vector<double> c_ref, h_ref;
  ReferenceLSTMUnit(num, dim, blobs.c_prev.ReadData(), blobs.gates.ReadData(),
                    blobs.cont.ReadData(), &c_ref, &h_ref);
  const std::vector<float> c = blobs.c.ReadData(), h = blobs.h.ReadData();
  for (int k = 0; k < num * dim; ++k) {
    EXPECT_NEAR(c[k], c_ref[k], 1e-5 * std::max(1.0, std::fabs(c_ref[k]))) << "c " << k;
    EXPECT_NEAR(h[k], h_ref[k], 1e-5) << "h " << k;
  }
}

TEST_P(LSTMUnitTest, GradientMatchesNumeric) {
  const int num = GetParam().first, dim = GetParam().second;
  UnitBlobs blobs(num, dim);
  FillGaussian(&blobs.c_prev, 0.f, 1.f, 5);
  FillGaussian(&blobs.gates, 0.f, 1.f, 6);
  blobs.cont.WriteData(AlternatingCont(num));
  auto layer = MakeLayer("type: 'LSTMUnit'");
  layer->SetUp(blobs.bottom(), blobs.top());
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, blobs.bottom(), blobs.top(), {0, 1}, options);
}

INSTANTIATE_TEST_SUITE_P(OddShapes, LSTMUnitTest,
                         ::testing::Values(std::make_pair(1, 1), std::make_pair(3, 5),
                                           std::make_pair(2, 13)));

// cont = 0 cuts the previous cell out: c and h follow from the gates alone,
// and c_prev gets no gradient for that stream.
TEST(LSTMUnit, ContZeroIgnoresPreviousCell) {
  const int num = 2, dim = 3;
  UnitBlobs blobs(num, dim);
  FillGaussian(&blobs.gates, 0.f, 1.f, 8);
  FillGaussian(&blobs.c_prev, 0.f, 1.f, 9);
  blobs.cont.WriteData(std::vector<float>{0.f, 0.f});
  auto layer = MakeLayer("type: 'LSTMUnit'");
  layer->SetUp(blobs.bottom(), blobs.top());
  layer->Forward(blobs.bottom(), blobs.top());
  const std::vector<float> c1 = blobs.c.ReadData(), h1 = blobs.h.ReadData();
  FillGaussian(&blobs.c_prev, 5.f, 3.f, 10);
  layer->Forward(blobs.bottom(), blobs.top());
  EXPECT_EQ(blobs.c.ReadData(), c1);
  EXPECT_EQ(blobs.h.ReadData(), h1);
  blobs.c.SetDiff(1.f);
  blobs.h.SetDiff(1.f);
  blobs.c_prev.SetDiff(7.f);
  layer->Backward(blobs.top(), {true, true, false}, blobs.bottom());
  for (float v : blobs.c_prev.ReadDiff()) EXPECT_EQ(v, 0.f);
}

// The forget gate's gradient is exact for a fractional cont too.
TEST(LSTMUnit, GradientWithFractionalCont) {
  const int num = 3, dim = 4;
  UnitBlobs blobs(num, dim);
  FillGaussian(&blobs.c_prev, 0.f, 1.f, 11);
  FillGaussian(&blobs.gates, 0.f, 1.f, 12);
  blobs.cont.WriteData(std::vector<float>{0.5f, 1.f, 0.25f});
  auto layer = MakeLayer("type: 'LSTMUnit'");
  layer->SetUp(blobs.bottom(), blobs.top());
  GradientCheckOptions options;
  options.step = 1e-3f;
  CheckGradient(*layer, blobs.bottom(), blobs.top(), {0, 1}, options);
}

// Only the requested bottom's diff is written.
TEST(LSTMUnit, PropagateDownSelectsBottoms) {
  const int num = 2, dim = 3;
  UnitBlobs blobs(num, dim);
  FillGaussian(&blobs.c_prev, 0.f, 1.f, 13);
  FillGaussian(&blobs.gates, 0.f, 1.f, 14);
  blobs.cont.WriteData(std::vector<float>{1.f, 1.f});
  auto layer = MakeLayer("type: 'LSTMUnit'");
  layer->SetUp(blobs.bottom(), blobs.top());
  layer->Forward(blobs.bottom(), blobs.top());
  blobs.c.SetDiff(1.f);
  blobs.h.SetDiff(-1.f);
  blobs.c_prev.SetDiff(42.f);
  blobs.gates.SetDiff(42.f);
  layer->Backward(blobs.top(), {false, true, false}, blobs.bottom());
  for (float v : blobs.c_prev.ReadDiff()) EXPECT_EQ(v, 42.f);
  int changed = 0;
  for (float v : blobs.gates.ReadDiff()) changed += v != 42.f;
  EXPECT_EQ(changed, num * 4 * dim);
  layer->Backward(blobs.top(), {true, false, false}, blobs.bottom());
  for (float v : blobs.c_prev.ReadDiff()) EXPECT_NE(v, 42.f);
}

TEST(LSTMUnit, ErrorsNameTheProblem) {
  auto layer = MakeLayer("type: 'LSTMUnit'");
  UnitBlobs blobs(2, 3);
  Blob bad_gates(TestContext(), {1, 2, 11});
  EXPECT_THROW(layer->SetUp({&blobs.c_prev, &bad_gates, &blobs.cont}, blobs.top()), Error);
  Blob bad_cont(TestContext(), {2, 1});
  auto layer2 = MakeLayer("type: 'LSTMUnit'");
  EXPECT_THROW(layer2->SetUp({&blobs.c_prev, &blobs.gates, &bad_cont}, blobs.top()), Error);
  auto layer3 = MakeLayer("type: 'LSTMUnit'");
  layer3->SetUp(blobs.bottom(), blobs.top());
  layer3->Forward(blobs.bottom(), blobs.top());
  try {
    layer3->Backward(blobs.top(), {true, true, true}, blobs.bottom());
    FAIL() << "backward to cont must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cont"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(layer3->AllowForceBackward(2));
  EXPECT_TRUE(layer3->AllowForceBackward(0));
}

}  // namespace test
}  // namespace dlcaffe
