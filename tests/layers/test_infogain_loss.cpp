#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>

#include "dlcaffe/io.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Geometry {
  int outer, channels, inner;
};

Geometry GeometryOf(const std::vector<int>& shape, int axis) {
  Geometry g{1, shape[axis], 1};
  for (int i = 0; i < axis; ++i) g.outer *= shape[i];
  for (size_t i = axis + 1; i < shape.size(); ++i) g.inner *= shape[i];
  return g;
}

std::vector<double> Softmax(const std::vector<float>& x, Geometry g) {
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

// Caffe master's InfogainLossLayer::Forward_cpu on the softmax of x.
double ReferenceLoss(const std::vector<float>& x, const std::vector<float>& labels,
                     const std::vector<float>& H, Geometry g, const std::string& mode,
                     const int* ignore) {
  const std::vector<double> p = Softmax(x, g);
  double loss = 0;
  int valid = 0;
  for (int o = 0; o < g.outer; ++o)
    for (int s = 0; s < g.inner; ++s) {
      const int l = int(labels[o * g.inner + s]);
      if (ignore && l == *ignore) continue;
      for (int j = 0; j < g.channels; ++j)
        loss -= H[l * g.channels + j] *
                std::log(std::max(p[(o * g.channels + j) * g.inner + s], 1e-20));
      ++valid;
    }
  double norm = 1;
  if (mode == "FULL") norm = g.outer * g.inner;
  if (mode == "VALID") norm = valid;
  if (mode == "BATCH_SIZE") norm = g.outer;
  return loss / std::max(norm, 1.0);
}

void FillLabels(Blob* labels, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(labels->count());
  for (float& l : v) l = float(rng() % channels);
  labels->WriteData(v);
}

// A non-symmetric, non-negative H with a heavy diagonal.
void FillInfogain(Blob* H, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.f, 0.5f);
  std::vector<float> v(channels * channels);
  for (int r = 0; r < channels; ++r)
    for (int c = 0; c < channels; ++c) v[r * channels + c] = r == c ? 1.f + dist(rng) : dist(rng);
  H->WriteData(v);
}

std::string Proto(const std::string& loss_param, int axis, const std::string& extra = "") {
  return "type: 'InfogainLoss' infogain_loss_param { axis: " + std::to_string(axis) +
         " } loss_param { " + loss_param + " } " + extra;
}

struct Case {
  std::vector<int> shape;
  int axis;
  std::vector<int> label_shape;
};

const Case kCases[] = {
    {{3, 5, 2, 3}, 1, {3, 1, 2, 3}},  // spatial labels
    {{127, 10}, 1, {127}},
    {{3, 2, 7}, 2, {3, 2}},           // classes on the last axis
    {{1, 3}, 1, {1}},
};

const char* kModes[] = {"FULL", "VALID", "BATCH_SIZE", "NONE"};

}  // namespace

TEST(InfogainLoss, ForwardMatchesReferenceInEveryMode) {
  const int ignore = 1;
  for (const Case& c : kCases)
    for (const char* mode : kModes)
      for (bool with_ignore : {false, true}) {
        const std::string loss_param =
            std::string("normalization: ") + mode + (with_ignore ? " ignore_label: 1" : "");
        SCOPED_TRACE(loss_param + " " + ::testing::PrintToString(c.shape));
        const Geometry g = GeometryOf(c.shape, c.axis);
        Blob x(TestContext(), c.shape), labels(TestContext(), c.label_shape),
            H(TestContext(), {g.channels, g.channels}), loss(TestContext());
        FillGaussian(&x, 0.f, 2.f, 1);
        FillLabels(&labels, g.channels, 2);
        FillInfogain(&H, g.channels, 3);
        auto layer = MakeLayer(Proto(loss_param, c.axis));
        layer->SetUp({&x, &labels, &H}, {&loss});
        ASSERT_EQ(loss.num_axes(), 0);
        layer->Forward({&x, &labels, &H}, {&loss});
        const double expected = ReferenceLoss(x.ReadData(), labels.ReadData(), H.ReadData(), g,
                                              mode, with_ignore ? &ignore : nullptr);
        EXPECT_NEAR(loss.ReadData()[0], expected, 1e-5 * std::max(1.0, expected));
      }
}

// With H = I the loss is SoftmaxWithLoss's: the softmax is applied inside.
TEST(InfogainLoss, IdentityMatrixGivesSoftmaxWithLoss) {
  Blob x(TestContext(), {4, 6, 3}), labels(TestContext(), {4, 3}), H(TestContext(), {1, 1, 6, 6}),
      loss(TestContext()), softmax_loss(TestContext());
  FillGaussian(&x, 0.f, 3.f, 4);
  FillLabels(&labels, 6, 5);
  std::vector<float> identity(36, 0.f);
  for (int i = 0; i < 6; ++i) identity[i * 7] = 1.f;
  H.WriteData(identity);
  auto infogain = MakeLayer(Proto("", 1));
  infogain->SetUp({&x, &labels, &H}, {&loss});
  infogain->Forward({&x, &labels, &H}, {&loss});
  auto reference = MakeLayer("type: 'SoftmaxWithLoss'");
  reference->SetUp({&x, &labels}, {&softmax_loss});
  reference->Forward({&x, &labels}, {&softmax_loss});
  EXPECT_NEAR(loss.ReadData()[0], softmax_loss.ReadData()[0], 1e-5);
}

// infogain_loss_param.source: H from a .binaryproto file equals H as bottom[2].
TEST(InfogainLoss, MatrixFromBinaryProtoFile) {
  Blob x(TestContext(), {5, 4}), labels(TestContext(), {5}), H(TestContext(), {4, 4}),
      loss_file(TestContext()), loss_bottom(TestContext());
  FillGaussian(&x, 0.f, 1.f, 6);
  FillLabels(&labels, 4, 7);
  FillInfogain(&H, 4, 8);
  caffe::BlobProto proto;
  H.ToProto(&proto);
  const std::string path = TempDir() + "/infogain.binaryproto";
  WriteProtoToBinaryFile(proto, path);
  auto from_file =
      MakeLayer("type: 'InfogainLoss' infogain_loss_param { source: '" + path + "' }");
  from_file->SetUp({&x, &labels}, {&loss_file});
  from_file->Forward({&x, &labels}, {&loss_file});
  auto from_bottom = MakeLayer("type: 'InfogainLoss'");
  from_bottom->SetUp({&x, &labels, &H}, {&loss_bottom});
  from_bottom->Forward({&x, &labels, &H}, {&loss_bottom});
  EXPECT_FLOAT_EQ(loss_file.ReadData()[0], loss_bottom.ReadData()[0]);
  // And the gradient through the file's matrix.
  CheckGradient(*from_file, {&x, &labels}, {&loss_file}, {0});
}

TEST(InfogainLoss, GradientMatchesNumericInEveryMode) {
  for (const Case& c : kCases)
    for (const char* mode : kModes)
      for (bool with_ignore : {false, true}) {
        const std::string loss_param =
            std::string("normalization: ") + mode + (with_ignore ? " ignore_label: 1" : "");
        SCOPED_TRACE(loss_param + " " + ::testing::PrintToString(c.shape));
        std::vector<int> shape = c.shape, label_shape = c.label_shape;
        if (shape[0] == 127) {  // 127 rows are covered by the forward test
          shape[0] = 13;
          label_shape[0] = 13;
        }
        const Geometry g = GeometryOf(shape, c.axis);
        Blob x(TestContext(), shape), labels(TestContext(), label_shape),
            H(TestContext(), {g.channels, g.channels}), loss(TestContext());
        FillGaussian(&x, 0.f, 2.f, 9);
        FillLabels(&labels, g.channels, 10);
        FillInfogain(&H, g.channels, 11);
        auto layer = MakeLayer(Proto(loss_param, c.axis));
        layer->SetUp({&x, &labels, &H}, {&loss});
        GradientCheckOptions options;
        options.max_checks_per_blob = 40;
        CheckGradient(*layer, {&x, &labels, &H}, {&loss}, {0}, options);
      }
}

TEST(InfogainLoss, LossWeightAndSecondTop) {
  Blob x(TestContext(), {3, 2, 7}), labels(TestContext(), {3, 2}), H(TestContext(), {7, 7}),
      loss(TestContext()), prob(TestContext()), unit_loss(TestContext());
  FillGaussian(&x, 0.f, 2.f, 12);
  FillLabels(&labels, 7, 13);
  FillInfogain(&H, 7, 14);
  auto unit = MakeLayer(Proto("", 2));
  unit->SetUp({&x, &labels, &H}, {&unit_loss});
  unit->Forward({&x, &labels, &H}, {&unit_loss});
  unit->Backward({&unit_loss}, {true, false, false}, {&x, &labels, &H});
  const std::vector<float> unit_dx = x.ReadDiff();

  auto layer = MakeLayer(Proto("", 2, "loss_weight: 2 loss_weight: 0"));
  layer->SetUp({&x, &labels, &H}, {&loss, &prob});
  ASSERT_EQ(prob.shape(), x.shape());
  EXPECT_EQ(layer->loss(0), 2.f);
  layer->Forward({&x, &labels, &H}, {&loss, &prob});
  const std::vector<double> expected = Softmax(x.ReadData(), {6, 7, 1});
  const std::vector<float> p = prob.ReadData();
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-6) << i;
  layer->Backward({&loss, &prob}, {true, false, false}, {&x, &labels, &H});
  const std::vector<float> dx = x.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], 2 * unit_dx[i], 1e-6) << i;
  EXPECT_THROW(layer->Backward({&loss, &prob}, {true, true, false}, {&x, &labels, &H}), Error);
  EXPECT_THROW(layer->Backward({&loss, &prob}, {true, false, true}, {&x, &labels, &H}), Error);
  EXPECT_FALSE(layer->AllowForceBackward(2));
}

TEST(InfogainLoss, LabelOutOfRangeIsAUserError) {
  Blob x(TestContext(), {4, 5}), labels(TestContext(), {4}), H(TestContext(), {5, 5}),
      loss(TestContext());
  FillGaussian(&x, 0.f, 1.f, 15);
  FillInfogain(&H, 5, 16);
  labels.WriteData({0.f, 7.f, 1.f, 255.f});
  auto layer = MakeLayer(Proto("ignore_label: 255", 1));
  layer->SetUp({&x, &labels, &H}, {&loss});
  layer->Forward({&x, &labels, &H}, {&loss});
  EXPECT_TRUE(std::isnan(loss.ReadData()[0]));
  try {
    layer->Forward({&x, &labels, &H}, {&loss});
    ADD_FAILURE() << "no error for label 7";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("label 7 at position 1"), std::string::npos) << message;
  }
  labels.WriteData({0.f, 4.f, 1.f, 255.f});  // the ignored label may lie outside
  layer->Forward({&x, &labels, &H}, {&loss});
  EXPECT_FALSE(std::isnan(loss.ReadData()[0]));
  EXPECT_NO_THROW(layer->Forward({&x, &labels, &H}, {&loss}));
}

TEST(InfogainLoss, ParameterAndShapeErrors) {
  Blob x(TestContext(), {4, 5}), labels(TestContext(), {4}), H(TestContext(), {5, 5}),
      small(TestContext(), {4, 4}), loss(TestContext());
  EXPECT_THROW(MakeLayer("type: 'InfogainLoss'")->SetUp({&x, &labels}, {&loss}), Error);
  EXPECT_THROW(MakeLayer("type: 'InfogainLoss' infogain_loss_param { source: '/nonexistent/h' }")
                   ->SetUp({&x, &labels}, {&loss}),
               Error);
  EXPECT_THROW(MakeLayer("type: 'InfogainLoss'")->SetUp({&x, &labels, &small}, {&loss}), Error);
  EXPECT_THROW(
      MakeLayer("type: 'InfogainLoss' loss_param { normalize: true }")->SetUp({&x, &labels, &H}, {&loss}),
      Error);
  Blob too_many_labels(TestContext(), {4, 2});
  EXPECT_THROW(MakeLayer("type: 'InfogainLoss'")->SetUp({&x, &too_many_labels, &H}, {&loss}),
               Error);
}

}  // namespace test
}  // namespace dlcaffe
