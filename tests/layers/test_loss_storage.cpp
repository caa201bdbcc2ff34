// The loss layers other than SoftmaxWithLoss (test_softmax_loss_storage)
// with 16-bit bottoms (mixed precision). Their kernels widen the scores,
// features or probabilities on load and sum in float as the float32 layers
// do; labels, targets, H and the loss stay float32, and each gradient is
// rounded once on store. So on values the type holds exactly, the loss
// equals the float32 layer's and each gradient is its rounding, bit for bit:
// EuclideanLoss (both bottoms), SigmoidCrossEntropyLoss (with ignored
// targets), HingeLoss (L1, L2), ContrastiveLoss (both features, legacy or
// not) and MultinomialLogisticLoss. InfogainLoss stores its softmax's
// probabilities in 16 bits, as SoftmaxWithLoss does: each is rounded once,
// a relative error of at most u (2^-11 for float16, 2^-8 for bfloat16), so
//   - each log p moves by at most u / (1 - u), and the loss, a weighted mean
//     of them, by at most u / (1 - u) times the largest row sum of |H|;
//   - each gradient (p_j S_l - H[l, j]) w / n (S_l the row sum of H) moves
//     by at most u p_j |S_l| w / n <= u |S_l| w / n before it is rounded,
//     within u |gradient| more.
// A 16-bit net keeps every loss's labels and loss in float32, with no Convert.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../src/passes/net_pass.hpp"
#include "dlcaffe/net.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_loss_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const StorageType kTypes[] = {StorageType::kFloat16, StorageType::kBFloat16};

// `count` uniform values in [lo, hi), rounded to `type`.
std::vector<float> Values(int count, float lo, float hi, unsigned seed, StorageType type) {
  Blob source(TestContext(), {count});
  FillUniform(&source, lo, hi, seed);
  return RoundedTo(source.ReadData(), type);
}

// `count` labels i * 7 mod `classes`.
std::vector<float> Labels(int count, int classes) {
  std::vector<float> labels(count);
  for (int i = 0; i < count; ++i) labels[i] = static_cast<float>((i * 7) % classes);
  return labels;
}

// The bottoms with the activations' type set to `type` (labels stay float).
std::vector<LossBottom> Typed(std::vector<LossBottom> bottoms, const std::vector<bool>& sixteen,
                              StorageType type) {
  for (size_t i = 0; i < bottoms.size(); ++i)
    if (sixteen[i]) bottoms[i].type = type;
  return bottoms;
}

struct Case {
  std::string param;
  // The bottoms' values, for a type: float32 except the 16-bit ones, which
  // hold values that type holds exactly.
  std::vector<LossBottom> (*bottoms)(StorageType);
  std::vector<bool> sixteen;  // which bottoms are 16-bit
};

std::vector<LossBottom> EuclideanBottoms(StorageType type) {
  return {{{4, 15}, Values(60, -2, 2, 3, type), StorageType::kFloat32, true},
          {{4, 3, 5}, Values(60, -2, 2, 5, type), StorageType::kFloat32, true}};
}

std::vector<LossBottom> SigmoidBottoms(StorageType type) {
  // Targets 0, 0.25, 1 and -1 (ignored).
  std::vector<float> targets(35);
  const float kinds[] = {0.f, 0.25f, 1.f, -1.f};
  for (int i = 0; i < 35; ++i) targets[i] = kinds[(i * 3) % 4];
  return {{{5, 7}, Values(35, -4, 4, 7, type), StorageType::kFloat32, true},
          {{5, 7}, targets}};
}

std::vector<LossBottom> HingeBottoms(StorageType type) {
  return {{{6, 5}, Values(30, -2, 2, 11, type), StorageType::kFloat32, true},
          {{6}, Labels(6, 5)}};
}

std::vector<LossBottom> ContrastiveBottoms(StorageType type) {
  // Features close enough that some dissimilar pairs are within the margin.
  return {{{6, 4, 1, 1}, Values(24, -0.5f, 0.5f, 13, type), StorageType::kFloat32, true},
          {{6, 4, 1, 1}, Values(24, -0.5f, 0.5f, 17, type), StorageType::kFloat32, true},
          {{6}, {1, 0, 0, 1, 0, 0}}};
}

std::vector<LossBottom> MultinomialBottoms(StorageType type) {
  return {{{5, 6}, Values(30, 0.05f, 1, 19, type), StorageType::kFloat32, true},
          {{5}, Labels(5, 6)}};
}

TEST(LossStorage, SixteenBitLossesEqualTheFloatLosses) {
  const Case cases[] = {
      {"type: 'EuclideanLoss'", EuclideanBottoms, {true, true}},
      {"type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: -1 normalization: VALID }",
       SigmoidBottoms, {true, false}},
      {"type: 'HingeLoss'", HingeBottoms, {true, false}},
      {"type: 'HingeLoss' hinge_loss_param { norm: L2 }", HingeBottoms, {true, false}},
      {"type: 'ContrastiveLoss' contrastive_loss_param { margin: 1.5 }", ContrastiveBottoms,
       {true, true, false}},
      {"type: 'ContrastiveLoss' contrastive_loss_param { margin: 1.5 legacy_version: true }",
       ContrastiveBottoms, {true, true, false}},
      {"type: 'MultinomialLogisticLoss'", MultinomialBottoms, {true, false}},
  };
  const float weight = 0.75f;
  for (StorageType type : kTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.param);
      const std::vector<LossBottom> values = c.bottoms(type);
      const LossRun half = RunLossInStorage(c.param, Typed(values, c.sixteen, type), weight);
      const LossRun full = RunLossInStorage(c.param, values, weight);
      ASSERT_GT(full.loss, 0.f);
      ASSERT_EQ(half.loss, full.loss);
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i].propagate) continue;
        ASSERT_EQ(half.diffs[i], RoundedTo(full.diffs[i], type)) << "bottom " << i;
        ASSERT_NE(full.diffs[i], std::vector<float>(full.diffs[i].size(), 0.f)) << i;
      }
    }
  }
}

TEST(LossStorage, SixteenBitInfogainStaysWithinTheRoundingOfTheProbabilities) {
  // Softmax over 5 channels at 2 positions of 3 images; label 3 ignored.
  const std::vector<int> shape = {3, 5, 2};
  const int count = 30, classes = 5, positions = 6;
  std::vector<float> labels = Labels(positions, classes);
  const std::vector<float> H = Values(classes * classes, -0.5f, 1.5f, 23,
                                      StorageType::kFloat32);
  double largest_row = 0;
  std::vector<double> row_sum(classes, 0.0);
  for (int l = 0; l < classes; ++l) {
    double abs_sum = 0;
    for (int j = 0; j < classes; ++j) {
      abs_sum += std::fabs(H[l * classes + j]);
      row_sum[l] += H[l * classes + j];
    }
    largest_row = std::max(largest_row, abs_sum);
  }
  const std::string param = "type: 'InfogainLoss' loss_param { ignore_label: 3 }";
  const float weight = 0.75f;
  int valid = 0;
  for (float l : labels) valid += l != 3.f;
  for (StorageType type : kTypes) {
    SCOPED_TRACE(StorageTypeName(type));
    const double u = type == StorageType::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    const std::vector<LossBottom> values = {
        {shape, Values(count, -3, 3, 29, type), StorageType::kFloat32, true},
        {{3, 2}, labels},
        {{classes, classes}, H}};
    const LossRun half = RunLossInStorage(param, Typed(values, {true, false, false}, type), weight);
    const LossRun full = RunLossInStorage(param, values, weight);
    ASSERT_NE(full.loss, 0.f);
    EXPECT_NEAR(half.loss, full.loss,
                u / (1 - u) * largest_row + 1e-6 * std::fabs(full.loss));
    for (int i = 0; i < count; ++i) {
      const int image = i / (classes * 2), position = i % 2;
      const int l = static_cast<int>(labels[image * 2 + position]);
      const double moved = l == 3 ? 0 : u * std::fabs(row_sum[l]) * weight / valid;
      ASSERT_NEAR(half.diffs[0][i], full.diffs[0][i],
                  moved + u * std::fabs(full.diffs[0][i]) + 1e-7)
          << i;
    }
    ASSERT_NE(full.diffs[0], std::vector<float>(count, 0.f));
  }
}

TEST(LossStorage, ASixteenBitNetKeepsLabelsAndLossesInFloat) {
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: FLOAT16
    layer { name: 'x' type: 'Input' top: 'x' top: 'x2' input_param { shape { dim: 4 dim: 6 }
                                                                       shape { dim: 4 dim: 6 } } }
    layer { name: 'labels' type: 'Input' top: 'label' top: 'target' top: 'similar' top: 'H'
            forward_type: FLOAT
            input_param { shape { dim: 4 } shape { dim: 4 dim: 6 } shape { dim: 4 }
                          shape { dim: 6 dim: 6 } } }
    layer { name: 'euclidean' type: 'EuclideanLoss' bottom: 'x' bottom: 'x2' top: 'l1' }
    layer { name: 'sigmoid' type: 'SigmoidCrossEntropyLoss' bottom: 'x' bottom: 'target'
            top: 'l2' }
    layer { name: 'hinge' type: 'HingeLoss' bottom: 'x' bottom: 'label' top: 'l3' }
    layer { name: 'contrastive' type: 'ContrastiveLoss' bottom: 'x' bottom: 'x2'
            bottom: 'similar' top: 'l4' }
    layer { name: 'multinomial' type: 'MultinomialLogisticLoss' bottom: 'x2' bottom: 'label'
            top: 'l5' }
    layer { name: 'infogain' type: 'InfogainLoss' bottom: 'x' bottom: 'label' bottom: 'H'
            top: 'l6' }
  )");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  EXPECT_EQ(typed.layer_size(), net.layer_size()) << "no Convert layers";
  for (const auto& layer : typed.layer()) {
    if (layer.name() == "x" || layer.name() == "labels") continue;
    SCOPED_TRACE(layer.name());
    EXPECT_EQ(layer.forward_type(), caffe::FLOAT16);
  }
  Net built(net, TestContext());
  for (const char* name : {"x", "x2"})
    EXPECT_EQ(built.blob_by_name(name)->storage_type(), StorageType::kFloat16) << name;
  for (const char* name : {"label", "target", "similar", "H", "l1", "l2", "l3", "l4", "l5", "l6"})
    EXPECT_EQ(built.blob_by_name(name)->storage_type(), StorageType::kFloat32) << name;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
