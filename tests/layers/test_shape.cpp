// Shape: the bottom's dimensions (start/end as ONNX's Shape clamps them, and
// the element count), following the bottom when it is reshaped; its values
// are not read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(Shape, DimensionsAndCountFollowTheBottom) {
  struct Case {
    std::string param;
    std::vector<float> want;
  };
  const std::vector<Case> cases = {{"", {2, 3, 5}},
                                   {"start: 1", {3, 5}},
                                   {"start: -1", {5}},
                                   {"start: 0 end: -1", {2, 3}},
                                   {"start: 2 end: 1", {}},
                                   {"start: -9 end: 9", {2, 3, 5}},
                                   {"size: true", {30}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.param);
    Blob x(TestContext(), {2, 3, 5}), top(TestContext());
    x.SetData(std::nanf(""));  // never read
    auto layer = MakeLayer("type: 'Shape' shape_param { " + c.param + " }");
    layer->SetUp({&x}, {&top});
    layer->Forward({&x}, {&top});
    EXPECT_EQ(top.count() ? top.ReadData() : std::vector<float>{}, c.want);
  }
  Blob x(TestContext(), {4, 0}), top(TestContext());
  auto layer = MakeLayer("type: 'Shape'");
  layer->SetUp({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.ReadData(), (std::vector<float>{4, 0}));
  x.Reshape({7});
  layer->Reshape({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.ReadData(), (std::vector<float>{7}));
}

}  // namespace test
}  // namespace dlcaffe
