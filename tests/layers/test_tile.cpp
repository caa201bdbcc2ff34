#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

static std::string TileText(int axis, int tiles) {
  return "type: 'Tile' tile_param { axis: " + std::to_string(axis) +
         " tiles: " + std::to_string(tiles) + " }";
}

TEST(Tile, ForwardMatchesReference) {
  const std::vector<int> shape = {2, 3, 5};
  for (int axis : {0, 1, 2, -1, -3}) {
    for (int tiles : {1, 3}) {
      SCOPED_TRACE(TileText(axis, tiles));
      Blob bottom(TestContext(), shape), top(TestContext());
      FillGaussian(&bottom, 0.f, 1.f, 7);
      auto layer = MakeLayer(TileText(axis, tiles));
      layer->SetUp({&bottom}, {&top});
      const int a = axis < 0 ? axis + 3 : axis;
      std::vector<int> expected = shape;
      expected[a] *= tiles;
      ASSERT_EQ(top.shape(), expected);
      layer->Forward({&bottom}, {&top});
      // Reference: top[o, t, r] = bottom[o, r] with r over the axes from a on.
      const std::vector<float> x = bottom.ReadData(), y = top.ReadData();
      const int outer = bottom.count(0, a), inner = bottom.count(a);
      for (int o = 0; o < outer; ++o)
        for (int t = 0; t < tiles; ++t)
          for (int r = 0; r < inner; ++r)
            ASSERT_EQ(y[(o * tiles + t) * inner + r], x[o * inner + r])
                << o << " " << t << " " << r;
    }
  }
}

TEST(Tile, GradientMatchesNumeric) {
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    Blob bottom(TestContext(), {2, 3, 5}), top(TestContext());
    FillGaussian(&bottom, 0.f, 1.f, 8);
    auto layer = MakeLayer(TileText(axis, 3));
    layer->SetUp({&bottom}, {&top});
    CheckGradient(*layer, {&bottom}, {&top});
  }
}

TEST(Tile, BadParametersAreErrors) {
  Blob bottom(TestContext(), {2, 3}), top(TestContext());
  for (const auto& c : std::vector<std::pair<std::string, std::string>>{
           {"type: 'Tile' tile_param { axis: 1 }", "number of tiles must be given"},
           {TileText(1, 0), "must be positive, got 0"},
           {TileText(2, 2), "axis 2 is out of range"},
       }) {
    try {
      MakeLayer(c.first)->SetUp({&bottom}, {&top});
      ADD_FAILURE() << c.first << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.second), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("(Tile)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace test
}  // namespace dlcaffe
