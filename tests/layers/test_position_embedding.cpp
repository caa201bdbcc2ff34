#include <gtest/gtest.h>

#include <string>

#include "util/error_of.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string LayerText(int max_positions) {
  return "type: 'PositionEmbedding' position_embedding_param { max_positions: " +
         std::to_string(max_positions) + " weight_filler { type: 'gaussian' std: 0.5 } }";
}

// x + table[position + t], t being the index along axis -2, in double.
std::vector<double> Reference(const std::vector<float>& x, const std::vector<float>& table,
                              int T, int D, int position) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int d = static_cast<int>(i % D), t = static_cast<int>((i / D) % T);
    y[i] = double(x[i]) + table[size_t(position + t) * D + d];
  }
  return y;
}

}  // namespace

TEST(PositionEmbedding, ForwardAddsTheRowOfEachPosition) {
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{
           {3, 13, 5}, {1, 1, 7}, {2, 4, 3, 6}, {13, 2}}) {
    const int T = shape[shape.size() - 2], D = shape.back();
    Blob bottom(TestContext(), shape), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 3);
    auto layer = MakeLayer(LayerText(17));
    layer->SetUp({&bottom}, {&top});
    ASSERT_EQ(layer->blobs().size(), 1u);
    ASSERT_EQ(layer->blobs()[0]->shape(), std::vector<int>({17, D}));
    ASSERT_EQ(top.shape(), shape);
    layer->Forward({&bottom}, {&top});
    const std::vector<double> expected =
        Reference(bottom.ReadData(), layer->blobs()[0]->ReadData(), T, D, 0);
    const std::vector<float> y = top.ReadData();
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-6) << i;
  }
}

// While decoding incrementally the rows start at the decode position: one
// new token at position 9 takes row 9.
TEST(PositionEmbedding, DecodeStateShiftsThePositions) {
  Blob bottom(TestContext(), {2, 3, 5}), top(TestContext());
  FillGaussian(&bottom, 0.f, 1.f, 5);
  auto layer = MakeLayer(LayerText(12));
  layer->SetUp({&bottom}, {&top});
  DecodeState state;
  state.incremental = true;
  state.position = 9;
  state.capacity = 12;
  layer->SetDecodeState(state);
  layer->Reshape({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  const std::vector<double> expected =
      Reference(bottom.ReadData(), layer->blobs()[0]->ReadData(), 3, 5, 9);
  const std::vector<float> y = top.ReadData();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-6) << i;
  // Position 10 with 3 rows would need rows 10 to 12 of a 12-row table.
  state.position = 10;
  layer->SetDecodeState(state);
  EXPECT_NE(ErrorOf([&] { layer->Reshape({&bottom}, {&top}); }).find("pass max_positions 12"),
            std::string::npos);
  state.position = 0;
  layer->SetDecodeState(state);
  layer->Reshape({&bottom}, {&top});
  EXPECT_NE(ErrorOf([&] { layer->Backward({&top}, {true}, {&bottom}); }).find("incrementally"),
            std::string::npos);
}

TEST(PositionEmbedding, GradientMatchesNumeric) {
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{3, 7, 5}, {2, 1, 4}}) {
    Blob bottom(TestContext(), shape), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 7);
    auto layer = MakeLayer(LayerText(9));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

// Rows past T get no gradient; in place, the input's diff is the top's.
TEST(PositionEmbedding, TableRowsPastTheSequenceGetNoGradientAndInPlaceWorks) {
  Blob x(TestContext(), {2, 3, 4});
  FillGaussian(&x, 0.f, 1.f, 9);
  const std::vector<float> x0 = x.ReadData();
  auto layer = MakeLayer(LayerText(6));
  layer->SetUp({&x}, {&x});
  const std::vector<float> table = layer->blobs()[0]->ReadData();
  layer->Forward({&x}, {&x});
  const std::vector<double> expected = Reference(x0, table, 3, 4, 0);
  const std::vector<float> y = x.ReadData();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-6) << i;
  std::vector<float> dy(x.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * float(i % 7) - 0.5f;
  x.WriteDiff(dy);
  layer->blobs()[0]->SetDiff(0.f);
  layer->Backward({&x}, {true}, {&x});
  const std::vector<float> dtable = layer->blobs()[0]->ReadDiff(), dx = x.ReadDiff();
  for (int t = 0; t < 6; ++t)
    for (int d = 0; d < 4; ++d) {
      const double want = t < 3 ? double(dy[t * 4 + d]) + dy[12 + t * 4 + d] : 0.0;
      ASSERT_NEAR(dtable[t * 4 + d], want, 1e-6) << "row " << t << ", " << d;
    }
  for (size_t i = 0; i < dx.size(); ++i) ASSERT_EQ(dx[i], dy[i]) << i;
}

TEST(PositionEmbedding, BadParametersAndShapesAreNamed) {
  Blob bottom(TestContext(), {2, 8, 3}), top(TestContext());
  EXPECT_NE(ErrorOf([&] { MakeLayer(LayerText(0))->SetUp({&bottom}, {&top}); })
                .find("max_positions must be"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { MakeLayer(LayerText(7))->SetUp({&bottom}, {&top}); })
                .find("positions 0 to 7 pass max_positions 7"),
            std::string::npos);
  Blob flat(TestContext(), {5});
  EXPECT_NE(ErrorOf([&] { MakeLayer(LayerText(7))->SetUp({&flat}, {&top}); })
                .find("at least 2 axes"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
