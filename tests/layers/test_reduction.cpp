#include <gtest/gtest.h>

#include <cmath>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

static const std::vector<std::string> kOps = {"SUM", "ASUM", "SUMSQ", "MEAN"};

static std::string ReductionText(const std::string& op, int axis, float coeff) {
  return "type: 'Reduction' reduction_param { operation: " + op +
         " axis: " + std::to_string(axis) + " coeff: " + std::to_string(coeff) + " }";
}

// Host reference, in double.
static std::vector<double> ReferenceReduction(const std::vector<float>& x, int rows,
                                              const std::string& op, float coeff) {
  const int dim = static_cast<int>(x.size()) / rows;
  std::vector<double> out(rows, 0.0);
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < dim; ++j) {
      const double v = x[r * dim + j];
      out[r] += op == "ASUM" ? std::fabs(v) : op == "SUMSQ" ? v * v : v;
    }
    out[r] *= coeff;
    if (op == "MEAN") out[r] /= dim;
  }
  return out;
}

TEST(Reduction, ForwardMatchesReference) {
  struct Case {
    std::vector<int> shape;
    int axis;
    std::vector<int> top_shape;
  };
  const std::vector<Case> cases = {
      {{3, 13, 5}, 0, {}},        // the default: everything to a scalar
      {{3, 13, 5}, 1, {3}},
      {{3, 13, 5}, -1, {3, 13}},
      {{3, 13, 5}, 2, {3, 13}},
      {{2, 300}, 1, {2}},         // long rows: a work-group per row
      {{1000}, 0, {}},
      {{127, 1}, -1, {127}},
  };
  for (const Case& c : cases) {
    for (const std::string& op : kOps) {
      for (float coeff : {1.f, -0.5f}) {
        const std::string text = ReductionText(op, c.axis, coeff);
        SCOPED_TRACE(text);
        Blob bottom(TestContext(), c.shape), top(TestContext());
        FillGaussian(&bottom, 0.f, 1.f, 13);
        auto layer = MakeLayer(text);
        layer->SetUp({&bottom}, {&top});
        ASSERT_EQ(top.shape(), c.top_shape);
        layer->Forward({&bottom}, {&top});
        const std::vector<float> x = bottom.ReadData(), y = top.ReadData();
        const std::vector<double> ref = ReferenceReduction(x, top.count(), op, coeff);
        const double dim = double(x.size()) / top.count();
        for (size_t r = 0; r < ref.size(); ++r)
          ASSERT_NEAR(y[r], ref[r], 1e-5 * (std::fabs(ref[r]) + dim)) << "row " << r;
      }
    }
  }
}

TEST(Reduction, GradientMatchesNumeric) {
  for (int axis : {0, 1, -1}) {
    for (const std::string& op : kOps) {
      const std::string text = ReductionText(op, axis, op == "SUM" ? 1.f : -0.75f);
      SCOPED_TRACE(text);
      Blob bottom(TestContext(), {3, 5, 7}), top(TestContext());
      FillGaussian(&bottom, 0.f, 1.f, 17);
      auto layer = MakeLayer(text);
      layer->SetUp({&bottom}, {&top});
      GradientCheckOptions options;
      if (op == "ASUM") options.kink_range = 0.02f;  // |x| has a kink at 0
      CheckGradient(*layer, {&bottom}, {&top}, {}, options);
    }
  }
}

TEST(Reduction, AsumGradientAtZeroIsZero) {
  Blob bottom(TestContext(), {4}), top(TestContext());
  bottom.WriteData({-2, 0, 3, 0});
  auto layer = MakeLayer("type: 'Reduction' reduction_param { operation: ASUM coeff: 2 }");
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.ReadData(), std::vector<float>{10.f});
  top.WriteDiff({0.5f});
  layer->Backward({&top}, {true}, {&bottom});
  EXPECT_EQ(bottom.ReadDiff(), (std::vector<float>{-1, 0, 1, 0}));
}

TEST(Reduction, AxisOutOfRangeIsAnError) {
  Blob bottom(TestContext(), {2, 3}), top(TestContext());
  try {
    MakeLayer(ReductionText("SUM", 2, 1.f))->SetUp({&bottom}, {&top});
    ADD_FAILURE() << "axis 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(Reduction): axis 2 is out of range"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
