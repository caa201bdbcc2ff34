// Accuracy with 16-bit scores (mixed precision): the labels and both tops
// stay float32. Comparisons of the same values give the same ranks, so on
// scores the type holds exactly the 16-bit layer's accuracy and per-class
// accuracies equal the float32 layer's (rounding makes ties, which both
// break alike), for top_k 1 and 3, with an ignored label, along axis 1 of a
// 4-D blob. In a 16-bit net the pass keeps the label and the tops float32.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../src/passes/net_pass.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::vector<std::vector<float>> RunAccuracy(const std::string& param, StorageType type,
                                            const std::vector<float>& scores,
                                            const std::vector<float>& labels) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(param);
  Blob bottom(ctx), label(ctx, {3, 1, 2, 5}), accuracy(ctx), per_class(ctx);
  bottom.set_storage_type(type);
  bottom.Reshape({3, 7, 2, 5});
  layer->SetUp({&bottom, &label}, {&accuracy, &per_class});
  bottom.WriteData(scores);
  label.WriteData(labels);
  layer->Forward({&bottom, &label}, {&accuracy, &per_class});
  return {accuracy.ReadData(), per_class.ReadData()};
}

TEST(AccuracyStorage, SixteenBitScoresRankAsFloatOnes) {
  const int count = 3 * 7 * 2 * 5, positions = 3 * 2 * 5;
  Blob source(TestContext(), {count});
  std::vector<float> labels(positions);
  for (int i = 0; i < positions; ++i) labels[i] = static_cast<float>((i * 5 + 2) % 7);
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const char* accuracy_param :
         {"top_k: 1", "top_k: 3", "top_k: 1 ignore_label: 4", "top_k: 2 ignore_label: 0"}) {
      SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + accuracy_param);
      FillUniform(&source, -1.f, 1.f, 43);
      const std::vector<float> scores = RoundedTo(source.ReadData(), type);
      const std::string param =
          std::string("type: 'Accuracy' accuracy_param { ") + accuracy_param + " }";
      const auto half = RunAccuracy(param, type, scores, labels);
      const auto full = RunAccuracy(param, StorageType::kFloat32, scores, labels);
      EXPECT_EQ(half, full);
      // Neither all hits nor all misses: the comparison can fail.
      EXPECT_GT(full[0][0], 0.f);
      EXPECT_LT(full[0][0], 1.f);
    }
  }
}

TEST(AccuracyStorage, InASixteenBitNetTheLabelsAndTopsStayFloat) {
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: FLOAT16
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 5 } } }
    layer { name: 'y' type: 'Input' top: 'y' forward_type: FLOAT
            input_param { shape { dim: 2 } } }
    layer { name: 'acc' type: 'Accuracy' bottom: 'x' bottom: 'y' top: 'acc' }
  )");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  bool seen = false;
  for (const auto& layer : typed.layer()) {
    if (layer.name() != "acc") continue;
    seen = true;
    EXPECT_EQ(layer.forward_type(), caffe::FLOAT16);
    EXPECT_EQ(layer.bottom(0), "x");
    EXPECT_EQ(layer.bottom(1), "y") << "no Convert on the labels";
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(typed.layer_size(), net.layer_size()) << "nothing converted";
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
