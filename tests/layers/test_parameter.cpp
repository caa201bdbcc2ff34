#include <gtest/gtest.h>

#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

static const char* kParameter =
    "type: 'Parameter' parameter_param { shape { dim: 3 dim: 1 dim: 13 } }";

TEST(Parameter, TopIsTheLearnableBlob) {
  Blob top(TestContext());
  auto layer = MakeLayer(kParameter);
  layer->SetUp({}, {&top});
  ASSERT_EQ(layer->blobs().size(), 1u);
  Blob& param = *layer->blobs()[0];
  EXPECT_EQ(param.shape(), (std::vector<int>{3, 1, 13}));
  EXPECT_EQ(param.ReadData(), std::vector<float>(39, 0.f));  // Caffe leaves it at zero
  EXPECT_EQ(top.shape(), param.shape());
  EXPECT_EQ(top.data(), param.data());
  FillGaussian(&param, 0.f, 1.f, 3);
  layer->Forward({}, {&top});
  EXPECT_EQ(top.ReadData(), param.ReadData());
}

TEST(Parameter, BackwardAccumulatesIntoTheParameterDiff) {
  Blob top(TestContext());
  auto layer = MakeLayer(kParameter);
  layer->SetUp({}, {&top});
  layer->Forward({}, {&top});
  std::vector<float> dy(top.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 4) - 1.5f;
  top.WriteDiff(dy);
  layer->blobs()[0]->SetDiff(1.f);
  layer->Backward({&top}, {}, {});
  layer->Backward({&top}, {}, {});
  const std::vector<float> diff = layer->blobs()[0]->ReadDiff();
  for (size_t i = 0; i < diff.size(); ++i) EXPECT_EQ(diff[i], 1.f + 2.f * dy[i]) << i;
  // No accumulation when the parameter is frozen.
  layer->set_param_propagate_down(0, false);
  layer->Backward({&top}, {}, {});
  EXPECT_EQ(layer->blobs()[0]->ReadDiff(), diff);
}

TEST(Parameter, GradientMatchesNumeric) {
  Blob top(TestContext());
  auto layer = MakeLayer(kParameter);
  layer->SetUp({}, {&top});
  FillGaussian(layer->blobs()[0].get(), 0.f, 1.f, 5);
  CheckGradient(*layer, {}, {&top});
}

TEST(Parameter, ScalarShape) {
  Blob top(TestContext());
  auto layer = MakeLayer("type: 'Parameter' parameter_param { shape { } }");
  layer->SetUp({}, {&top});
  EXPECT_EQ(top.num_axes(), 0);
  EXPECT_EQ(top.count(), 1);
}

}  // namespace test
}  // namespace dlcaffe
