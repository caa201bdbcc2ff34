// SoftmaxWithLoss with 16-bit scores (mixed precision): the probabilities
// and the score gradient are stored in 16 bits, the labels and the loss in
// float32 (16 bits hold integers only to 2048, bfloat16 to 256). Against
// the float32 layer on the same scores (values the type holds exactly):
//   - each probability is rounded once, a relative error of at most u
//     (2^-11 for float16, 2^-8 for bfloat16), so each term -log(p) moves by
//     at most u / (1 - u), and so does the normalized loss;
//   - each gradient (p - onehot) w / n uses a probability off by at most u,
//     then is rounded once: within u (w / n + |gradient|).
// A 16-bit net keeps the labels and the loss float32, with no Convert.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dlcaffe/net.hpp"
#include "../../src/passes/net_pass.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_loss_run.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

LossRun RunLoss(const std::string& param, StorageType type, const std::vector<int>& shape,
                const std::vector<int>& label_shape, const std::vector<float>& scores,
                const std::vector<float>& labels, float weight) {
  return RunLossInStorage(param, {{shape, scores, type, true}, {label_shape, labels}}, weight);
}

TEST(SoftmaxLossStorage, SixteenBitScoresStayWithinTheRoundingOfTheProbabilities) {
  struct Case {
    const char* name;
    std::string loss_param;
    std::vector<int> shape, label_shape;
  };
  // 3 x 5 x 2 x 3: softmax over 5 channels at 6 positions of each image;
  // 7 x 11: rows. Label 2 is ignored in the first case (VALID divides by the
  // rest).
  const Case cases[] = {
      {"spatial, ignore 2, VALID", "loss_param { ignore_label: 2 normalization: VALID }",
       {3, 5, 2, 3}, {3, 1, 2, 3}},
      {"rows, FULL", "loss_param { normalization: FULL }", {7, 11}, {7}},
  };
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    const double u = type == StorageType::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + c.name);
      int count = 1, labels_count = 1;
      for (int d : c.shape) count *= d;
      for (int d : c.label_shape) labels_count *= d;
      const int channels = c.shape[1];
      Blob source(TestContext(), {count});
      FillUniform(&source, -3.f, 3.f, 17);
      const std::vector<float> scores = RoundedTo(source.ReadData(), type);
      std::vector<float> labels(labels_count);
      for (int i = 0; i < labels_count; ++i) labels[i] = static_cast<float>((i * 7) % channels);
      const std::string param =
          "name: 'loss' type: 'SoftmaxWithLoss' " + c.loss_param;
      const float weight = 0.75f;
      const LossRun half = RunLoss(param, type, c.shape, c.label_shape, scores, labels, weight);
      const LossRun full =
          RunLoss(param, StorageType::kFloat32, c.shape, c.label_shape, scores, labels, weight);
      ASSERT_GT(full.loss, 0.f);
      EXPECT_NEAR(half.loss, full.loss, u / (1 - u) + 1e-6 * full.loss);
      // The normalizer: every position (FULL) or the positions not ignored.
      int valid = 0;
      for (float l : labels) valid += !(c.loss_param.find("ignore_label: 2") != std::string::npos &&
                                        l == 2.f);
      const double n = c.loss_param.find("FULL") != std::string::npos ? labels_count : valid;
      for (int i = 0; i < count; ++i)
        ASSERT_NEAR(half.diffs[0][i], full.diffs[0][i],
                    u * (weight / n + std::fabs(full.diffs[0][i])) + 1e-7)
            << i;
    }
  }
}

TEST(SoftmaxLossStorage, ASixteenBitNetKeepsLabelsAndLossInFloat) {
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: BFLOAT16
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 4 dim: 6 } } }
    layer { name: 'labels' type: 'Input' top: 'label' forward_type: FLOAT
            input_param { shape { dim: 4 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'ip'
            inner_product_param { num_output: 300 weight_filler { type: 'gaussian' std: 0.1 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
  )");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  EXPECT_EQ(typed.layer_size(), net.layer_size()) << "no Convert layers";
  for (const auto& layer : typed.layer())
    if (layer.name() == "loss") {
      EXPECT_EQ(layer.forward_type(), caffe::BFLOAT16);
      EXPECT_EQ(layer.bottom(0), "ip");
      EXPECT_EQ(layer.bottom(1), "label");
    }
  Net built(net, TestContext());
  EXPECT_EQ(built.blob_by_name("ip")->storage_type(), StorageType::kBFloat16);
  EXPECT_EQ(built.blob_by_name("label")->storage_type(), StorageType::kFloat32);
  EXPECT_EQ(built.blob_by_name("loss")->storage_type(), StorageType::kFloat32);
  // Labels above bfloat16's 256 arrive whole: the loss is finite and the
  // label check has nothing to say.
  built.blob_by_name("x")->WriteData(std::vector<float>(24, 0.5f));
  built.blob_by_name("label")->WriteData({257.f, 299.f, 3.f, 258.f});
  const float loss = built.ForwardBackward();
  EXPECT_TRUE(std::isfinite(loss)) << loss;
  EXPECT_NEAR(loss, std::log(300.f), 0.5f);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
