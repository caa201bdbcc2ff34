#include <gtest/gtest.h>

#include <cmath>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// Indices with repeats (4, 2) and a row that is never picked (3).
static const std::vector<float> kIndices = {4, 0, 4, 2, 2, 2, 1};

TEST(BatchReindex, ForwardCopiesTheIndexedRows) {
  for (const std::vector<int>& shape :
       {std::vector<int>{5, 3, 7}, std::vector<int>{5}, std::vector<int>{5, 13, 1}}) {
    Blob data(TestContext(), shape), indices(TestContext(), {(int)kIndices.size()}),
        top(TestContext());
    FillGaussian(&data, 0.f, 1.f, 3);
    indices.WriteData(kIndices);
    auto layer = MakeLayer("type: 'BatchReindex'");
    layer->SetUp({&data, &indices}, {&top});
    std::vector<int> expected_shape = shape;
    expected_shape[0] = static_cast<int>(kIndices.size());
    ASSERT_EQ(top.shape(), expected_shape);
    layer->Forward({&data, &indices}, {&top});
    const std::vector<float> x = data.ReadData(), y = top.ReadData();
    const int inner = data.count(1);
    for (size_t r = 0; r < kIndices.size(); ++r)
      for (int c = 0; c < inner; ++c)
        ASSERT_EQ(y[r * inner + c], x[int(kIndices[r]) * inner + c]) << r << " " << c;
  }
}

TEST(BatchReindex, BackwardSumsRepeatedRows) {
  Blob data(TestContext(), {5, 3, 7}), indices(TestContext(), {(int)kIndices.size()}),
      top(TestContext());
  indices.WriteData(kIndices);
  auto layer = MakeLayer("type: 'BatchReindex'");
  layer->SetUp({&data, &indices}, {&top});
  layer->Forward({&data, &indices}, {&top});
  std::vector<float> dy(top.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 13) - 1.f;
  top.WriteDiff(dy);
  data.SetDiff(7.f);  // overwritten, not accumulated
  layer->Backward({&top}, {true, false}, {&data, &indices});
  const int inner = data.count(1);
  std::vector<double> expected(data.count(), 0.0);
  for (size_t r = 0; r < kIndices.size(); ++r)
    for (int c = 0; c < inner; ++c) expected[int(kIndices[r]) * inner + c] += dy[r * inner + c];
  const std::vector<float> dx = data.ReadDiff();
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_NEAR(dx[i], expected[i], 1e-6) << i;
}

TEST(BatchReindex, GradientMatchesNumeric) {
  Blob data(TestContext(), {5, 2, 3}), indices(TestContext(), {(int)kIndices.size()}),
      top(TestContext());
  FillGaussian(&data, 0.f, 1.f, 5);
  indices.WriteData(kIndices);
  auto layer = MakeLayer("type: 'BatchReindex'");
  layer->SetUp({&data, &indices}, {&top});
  CheckGradient(*layer, {&data, &indices}, {&top}, {0});
}

TEST(BatchReindex, InvalidIndicesGiveNaNRows) {
  Blob data(TestContext(), {3, 2}), indices(TestContext(), {4}), top(TestContext());
  data.WriteData({1, 2, 3, 4, 5, 6});
  indices.WriteData({2, -1, 3, 1.5f});  // 1.5 truncates to row 1, as in Caffe
  auto layer = MakeLayer("type: 'BatchReindex'");
  layer->SetUp({&data, &indices}, {&top});
  layer->Forward({&data, &indices}, {&top});
  const std::vector<float> y = top.ReadData();
  EXPECT_EQ(y[0], 5.f);
  EXPECT_EQ(y[1], 6.f);
  for (int i = 2; i < 6; ++i) EXPECT_TRUE(std::isnan(y[i])) << i;
  EXPECT_EQ(y[6], 3.f);
  EXPECT_EQ(y[7], 4.f);
  // Invalid rows pass no gradient.
  top.WriteDiff({1, 1, 10, 10, 100, 100, 1000, 1000});
  layer->Backward({&top}, {true, false}, {&data, &indices});
  EXPECT_EQ(data.ReadDiff(), (std::vector<float>{0, 0, 1000, 1000, 1, 1}));
}

TEST(BatchReindex, Errors) {
  Blob data(TestContext(), {3, 2}), indices(TestContext(), {2, 1}), top(TestContext());
  try {
    MakeLayer("type: 'BatchReindex'")->SetUp({&data, &indices}, {&top});
    ADD_FAILURE() << "2-D indices accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be a 1-D blob"), std::string::npos) << e.what();
  }
  indices.Reshape({2});
  auto layer = MakeLayer("type: 'BatchReindex'");
  layer->SetUp({&data, &indices}, {&top});
  layer->Forward({&data, &indices}, {&top});
  EXPECT_THROW(layer->Backward({&top}, {true, true}, {&data, &indices}), Error);
}

}  // namespace test
}  // namespace dlcaffe
