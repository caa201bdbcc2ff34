#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct LossGeometry {
  int outer, channels, inner;
};

LossGeometry Geometry(const std::vector<int>& shape, int axis) {
  LossGeometry g{1, shape[axis], 1};
  for (int i = 0; i < axis; ++i) g.outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) g.inner *= shape[i];
  return g;
}

std::vector<double> ReferenceProbabilities(const std::vector<float>& x, LossGeometry g) {
  std::vector<double> p(x.size());
  for (int o = 0; o < g.outer; ++o)
    for (int s = 0; s < g.inner; ++s) {
      auto at = [&](int c) { return (o * g.channels + c) * g.inner + s; };
      double maxval = -INFINITY, sum = 0;
      for (int c = 0; c < g.channels; ++c) maxval = std::max<double>(maxval, x[at(c)]);
      for (int c = 0; c < g.channels; ++c) sum += std::exp(x[at(c)] - maxval);
      for (int c = 0; c < g.channels; ++c) p[at(c)] = std::exp(x[at(c)] - maxval) / sum;
    }
  return p;
}

// Caffe's rules: FULL divides by every position, VALID by the non-ignored
// ones, BATCH_SIZE by outer, NONE by 1; never by less than 1.
double ReferenceNormalizer(const std::string& mode, LossGeometry g, int valid) {
  double n = 1;
  if (mode == "FULL") n = g.outer * g.inner;
  if (mode == "VALID") n = valid;
  if (mode == "BATCH_SIZE") n = g.outer;
  return std::max(n, 1.0);
}

struct LossReference {
  double loss;
  std::vector<double> gradient;  // d loss / d x for loss weight 1
};

LossReference ReferenceLoss(const std::vector<float>& x, const std::vector<float>& labels,
                            LossGeometry g, const std::string& mode, const int* ignore) {
  std::vector<double> p = ReferenceProbabilities(x, g);
  LossReference r{0, std::vector<double>(x.size(), 0.0)};
  int valid = 0;
  for (int o = 0; o < g.outer; ++o)
    for (int s = 0; s < g.inner; ++s) {
      const int label = int(labels[o * g.inner + s]);
      if (ignore && label == *ignore) continue;
      ++valid;
      r.loss -= std::log(std::max(p[(o * g.channels + label) * g.inner + s], double(FLT_MIN)));
      for (int c = 0; c < g.channels; ++c) {
        const int k = (o * g.channels + c) * g.inner + s;
        r.gradient[k] = p[k] - (c == label ? 1.0 : 0.0);
      }
    }
  const double norm = ReferenceNormalizer(mode, g, valid);
  r.loss /= norm;
  for (double& d : r.gradient) d /= norm;
  return r;
}

void FillLabels(Blob* labels, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(labels->count());
  for (float& l : v) l = float(rng() % channels);
  labels->WriteData(v);
}

std::string LossProto(const std::string& loss_param, int axis = 1,
                      const std::string& extra = "") {
  return "type: 'SoftmaxWithLoss' softmax_param { axis: " + std::to_string(axis) +
         " } loss_param { " + loss_param + " } " + extra;
}

struct LossCase {
  std::vector<int> shape;
  int axis;
  std::vector<int> label_shape;
};

const LossCase kCases[] = {
    {{3, 5, 2, 3}, 1, {3, 1, 2, 3}},  // spatial labels
    {{127, 10}, 1, {127}},            // LeNet/CIFAR style
    {{3, 2, 7}, 2, {3, 2}},           // softmax over the last axis
    {{1, 3}, 1, {1}},
    {{2, 3, 13, 13}, 1, {2, 1, 13, 13}},  // more positions than the reduction group
};

const char* kModes[] = {"FULL", "VALID", "BATCH_SIZE", "NONE"};

}  // namespace

TEST(SoftmaxWithLoss, ForwardMatchesReferenceInEveryMode) {
  const int ignore = 2;
  for (const LossCase& c : kCases) {
    for (const char* mode : kModes) {
      for (bool with_ignore : {false, true}) {
        const std::string loss_param = std::string("normalization: ") + mode +
                                       (with_ignore ? " ignore_label: 2" : "");
        SCOPED_TRACE(loss_param + " axis " + std::to_string(c.axis));
        Blob x(TestContext(), c.shape), labels(TestContext(), c.label_shape),
            loss(TestContext());
        FillGaussian(&x, 0.f, 2.f, 3);
        const LossGeometry g = Geometry(c.shape, c.axis);
        FillLabels(&labels, g.channels, 4);
        auto layer = MakeLayer(LossProto(loss_param, c.axis));
        layer->SetUp({&x, &labels}, {&loss});
        ASSERT_EQ(loss.num_axes(), 0);
        EXPECT_EQ(layer->loss(0), 1.f);
        layer->Forward({&x, &labels}, {&loss});
        const double expected = ReferenceLoss(x.ReadData(), labels.ReadData(), g, mode,
                                              with_ignore ? &ignore : nullptr).loss;
        EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
      }
    }
  }
}

// Legacy `normalize`: true acts as VALID, false as BATCH_SIZE; an explicit
// normalization wins over it.
TEST(SoftmaxWithLoss, LegacyNormalizeFlag) {
  const int ignore = 1;
  const struct {
    const char* param;
    const char* mode;
  } cases[] = {
      {"normalize: true ignore_label: 1", "VALID"},
      {"normalize: false ignore_label: 1", "BATCH_SIZE"},
      {"normalize: false normalization: NONE ignore_label: 1", "NONE"},
      {"ignore_label: 1", "VALID"},  // the default
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.param);
    Blob x(TestContext(), {3, 5, 2, 3}), labels(TestContext(), {3, 1, 2, 3}),
        loss(TestContext());
    FillGaussian(&x, 0.f, 2.f, 5);
    FillLabels(&labels, 5, 6);
    auto layer = MakeLayer(LossProto(c.param));
    layer->SetUp({&x, &labels}, {&loss});
    layer->Forward({&x, &labels}, {&loss});
    const double expected = ReferenceLoss(x.ReadData(), labels.ReadData(), {3, 5, 6}, c.mode,
                                          &ignore).loss;
    EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
  }
}

TEST(SoftmaxWithLoss, GradientMatchesNumericInEveryMode) {
  for (const LossCase& c : kCases) {
    for (const char* mode : kModes) {
      for (bool with_ignore : {false, true}) {
        const std::string loss_param = std::string("normalization: ") + mode +
                                       (with_ignore ? " ignore_label: 2" : "");
        SCOPED_TRACE(loss_param + " axis " + std::to_string(c.axis));
        std::vector<int> shape = c.shape, label_shape = c.label_shape;
        if (shape[0] == 127) {  // 127 rows are covered by the forward test
          shape[0] = 13;
          label_shape[0] = 13;
        }
        Blob x(TestContext(), shape), labels(TestContext(), label_shape),
            loss(TestContext());
        FillGaussian(&x, 0.f, 2.f, 7);
        FillLabels(&labels, Geometry(shape, c.axis).channels, 8);
        auto layer = MakeLayer(LossProto(loss_param, c.axis));
        layer->SetUp({&x, &labels}, {&loss});
        // The checker sets a random top diff: backward must scale by it.
        GradientCheckOptions options;
        options.max_checks_per_blob = 60;
        CheckGradient(*layer, {&x, &labels}, {&loss}, {0}, options);
      }
    }
  }
}

// loss_weight lands in the top diff at SetUp; backward scales by it.
TEST(SoftmaxWithLoss, BackwardScalesByLossWeight) {
  Blob x(TestContext(), {3, 5, 2, 3}), labels(TestContext(), {3, 1, 2, 3}),
      loss(TestContext());
  FillGaussian(&x, 0.f, 2.f, 9);
  FillLabels(&labels, 5, 10);
  labels.SetDiff(42.f);
  auto layer = MakeLayer(LossProto("ignore_label: 0", 1, "loss_weight: 3"));
  layer->SetUp({&x, &labels}, {&loss});
  EXPECT_EQ(layer->loss(0), 3.f);
  layer->Forward({&x, &labels}, {&loss});
  layer->Backward({&loss}, {true, false}, {&x, &labels});
  const int ignore = 0;
  LossReference ref = ReferenceLoss(x.ReadData(), labels.ReadData(), {3, 5, 6}, "VALID", &ignore);
  std::vector<float> dx = x.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], 3 * ref.gradient[i], 1e-6) << i;
  for (float d : labels.ReadDiff()) EXPECT_EQ(d, 42.f);  // labels get no gradient
}

TEST(SoftmaxWithLoss, SecondTopHoldsTheProbabilities) {
  Blob x(TestContext(), {3, 2, 7}), labels(TestContext(), {3, 2}), loss(TestContext()),
      prob(TestContext());
  FillGaussian(&x, 0.f, 2.f, 11);
  FillLabels(&labels, 7, 12);
  // As in Caffe, two tops need a loss_weight for each.
  auto layer = MakeLayer(LossProto("", 2, "loss_weight: 1 loss_weight: 0"));
  layer->SetUp({&x, &labels}, {&loss, &prob});
  ASSERT_EQ(prob.shape(), x.shape());
  layer->Forward({&x, &labels}, {&loss, &prob});
  std::vector<double> expected = ReferenceProbabilities(x.ReadData(), {6, 7, 1});
  std::vector<float> p = prob.ReadData();
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-6) << i;
  const double expected_loss =
      ReferenceLoss(x.ReadData(), labels.ReadData(), {6, 7, 1}, "VALID", nullptr).loss;
  EXPECT_NEAR(loss.ReadData()[0], expected_loss, 1e-5);
}

// A bad label makes that pass's loss NaN; a later forward pass throws, and
// the layer works again once the labels are fixed.
TEST(SoftmaxWithLoss, LabelOutOfRangeIsAUserError) {
  for (float bad : {5.f, -1.f}) {
    Blob x(TestContext(), {4, 5}), labels(TestContext(), {4}), loss(TestContext());
    FillGaussian(&x, 0.f, 1.f, 13);
    labels.WriteData({0.f, 4.f, bad, 1.f});
    auto layer = MakeLayer(LossProto(""));
    layer->SetUp({&x, &labels}, {&loss});
    layer->Forward({&x, &labels}, {&loss});
    EXPECT_TRUE(std::isnan(loss.ReadData()[0]));
    try {
      layer->Forward({&x, &labels}, {&loss});
      ADD_FAILURE() << "no error for label " << bad;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("out of range [0, 5)"), std::string::npos) << message;
      EXPECT_NE(message.find("position 2"), std::string::npos) << message;
    }
    labels.WriteData({0.f, 4.f, 2.f, 1.f});
    layer->Forward({&x, &labels}, {&loss});
    EXPECT_FALSE(std::isnan(loss.ReadData()[0]));
    EXPECT_NO_THROW(layer->Forward({&x, &labels}, {&loss}));
  }
}

TEST(SoftmaxWithLoss, IgnoredLabelMayLieOutsideTheClasses) {
  Blob x(TestContext(), {4, 5}), labels(TestContext(), {4}), loss(TestContext());
  FillGaussian(&x, 0.f, 1.f, 15);
  labels.WriteData({0.f, 255.f, 3.f, 255.f});
  auto layer = MakeLayer(LossProto("ignore_label: 255"));
  layer->SetUp({&x, &labels}, {&loss});
  layer->Forward({&x, &labels}, {&loss});
  const int ignore = 255;
  const double expected =
      ReferenceLoss(x.ReadData(), labels.ReadData(), {4, 5, 1}, "VALID", &ignore).loss;
  EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5);
  EXPECT_NO_THROW(layer->Forward({&x, &labels}, {&loss}));
}

TEST(SoftmaxWithLoss, ShapeAndBackwardErrors) {
  Blob x(TestContext(), {4, 5}), labels(TestContext(), {4, 2}), loss(TestContext());
  auto layer = MakeLayer(LossProto(""));
  EXPECT_THROW(layer->SetUp({&x, &labels}, {&loss}), Error);  // 8 labels for 4 rows
  Blob good_labels(TestContext(), {4});
  auto ok = MakeLayer(LossProto(""));
  ok->SetUp({&x, &good_labels}, {&loss});
  ok->Forward({&x, &good_labels}, {&loss});
  EXPECT_THROW(ok->Backward({&loss}, {true, true}, {&x, &good_labels}), Error);
  EXPECT_FALSE(ok->AllowForceBackward(1));
}

}  // namespace test
}  // namespace dlcaffe
