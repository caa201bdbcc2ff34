#include <gtest/gtest.h>

#include <string>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string LayerText(int axis) {
  return "type: 'Positions' positions_param { axis: " + std::to_string(axis) + " }";
}

void ExpectPositions(const Blob& top, int first, int count) {
  ASSERT_EQ(top.shape(), std::vector<int>({count}));
  const std::vector<float> y = top.ReadData();
  for (int t = 0; t < count; ++t) ASSERT_EQ(y[t], float(first + t)) << t;
}

}  // namespace

// The rows along the axis, from 0 outside decoding; the bottom's values do
// not matter, its length along the axis does.
TEST(Positions, CountsTheRowsAlongTheAxis) {
  Blob ids(TestContext(), {2, 13, 3}), top(TestContext());
  FillGaussian(&ids, 0.f, 5.f, 3);
  for (const auto& [axis, length] : std::vector<std::pair<int, int>>{{1, 13}, {-1, 3}, {0, 2}, {-2, 13}}) {
    auto layer = MakeLayer(LayerText(axis));
    layer->SetUp({&ids}, {&top});
    layer->Forward({&ids}, {&top});
    ExpectPositions(top, 0, length);
  }
}

// While decoding incrementally they start at the decode position, and go
// back to 0 when it ends.
TEST(Positions, DecodeStateShiftsThem) {
  Blob ids(TestContext(), {1, 1}), top(TestContext());
  auto layer = MakeLayer(LayerText(1));
  layer->SetUp({&ids}, {&top});
  DecodeState state;
  state.incremental = true;
  state.position = 41;
  state.capacity = 64;
  layer->SetDecodeState(state);
  layer->Reshape({&ids}, {&top});
  layer->Forward({&ids}, {&top});
  ExpectPositions(top, 41, 1);
  ids.Reshape({1, 5});
  state.position = 7;
  layer->SetDecodeState(state);
  layer->Reshape({&ids}, {&top});
  layer->Forward({&ids}, {&top});
  ExpectPositions(top, 7, 5);
  layer->SetDecodeState(DecodeState());
  layer->Forward({&ids}, {&top});
  ExpectPositions(top, 0, 5);
}

TEST(Positions, AnAxisOutOfRangeIsNamed) {
  Blob ids(TestContext(), {1, 4}), top(TestContext());
  EXPECT_NE(ErrorOf([&] { MakeLayer(LayerText(2))->SetUp({&ids}, {&top}); })
                .find("positions_param.axis 2 is out of range for the bottom"),
            std::string::npos);
}

}  // namespace test
}  // namespace dlcaffe
