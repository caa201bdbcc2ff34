#include <gtest/gtest.h>

#include "dlcaffe/error.hpp"
#include "util/gradient_checker.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// Two filtered bottoms (data 7 x 3 x 5, labels 7) and a selector.
struct FilterFixture {
  explicit FilterFixture(const std::vector<float>& selection,
                         const std::vector<int>& selector_shape = {7})
      : data(TestContext(), {7, 3, 5}),
        labels(TestContext(), {7}),
        selector(TestContext(), selector_shape),
        top_data(TestContext()),
        top_labels(TestContext()) {
    FillGaussian(&data, 0.f, 1.f, 3);
    FillUniform(&labels, 0.f, 10.f, 4);
    selector.WriteData(selection);
    layer = MakeLayer("type: 'Filter'");
    layer->SetUp(bottom(), top());
  }
  std::vector<Blob*> bottom() { return {&data, &labels, &selector}; }
  std::vector<Blob*> top() { return {&top_data, &top_labels}; }
  Blob data, labels, selector, top_data, top_labels;
  std::unique_ptr<Layer> layer;
};

static std::vector<int> Selected(const std::vector<float>& selection) {
  std::vector<int> rows;
  for (size_t r = 0; r < selection.size(); ++r)
    if (selection[r] != 0.f) rows.push_back(static_cast<int>(r));
  return rows;
}

static const std::vector<std::vector<float>> kSelections = {
    {1, 1, 1, 1, 1, 1, 1},          // all
    {0, 0, 0, 0, 0, 0, 0},          // none
    {0, 1, 0, 0, 2.5f, -1, 0},      // some (any nonzero value selects)
    {1, 0, 0, 0, 0, 0, 1},
};

TEST(Filter, ForwardKeepsTheSelectedRows) {
  for (const auto& selection : kSelections) {
    FilterFixture f(selection);
    // As in Caffe, the first Reshape (SetUp) does not read the selector.
    EXPECT_EQ(f.top_data.shape(), f.data.shape());
    f.layer->Reshape(f.bottom(), f.top());  // what the Net does before Forward
    const std::vector<int> rows = Selected(selection);
    const int k = static_cast<int>(rows.size());
    ASSERT_EQ(f.top_data.shape(), (std::vector<int>{k, 3, 5}));
    ASSERT_EQ(f.top_labels.shape(), (std::vector<int>{k}));
    f.layer->Forward(f.bottom(), f.top());
    const std::vector<float> x = f.data.ReadData(), l = f.labels.ReadData();
    const std::vector<float> y = f.top_data.ReadData(), yl = f.top_labels.ReadData();
    for (int r = 0; r < k; ++r) {
      EXPECT_EQ(yl[r], l[rows[r]]) << r;
      for (int c = 0; c < 15; ++c) ASSERT_EQ(y[r * 15 + c], x[rows[r] * 15 + c]) << r;
    }
  }
}

TEST(Filter, BackwardScattersToTheSelectedRows) {
  for (const auto& selection : kSelections) {
    FilterFixture f(selection);
    f.layer->Reshape(f.bottom(), f.top());
    f.layer->Forward(f.bottom(), f.top());
    std::vector<float> dy(f.top_data.count());
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i) + 1.f;
    f.top_data.WriteDiff(dy);
    f.data.SetDiff(9.f);  // overwritten everywhere, zero for unselected rows
    f.layer->Backward(f.top(), {true, false, false}, f.bottom());
    std::vector<float> expected(f.data.count(), 0.f);
    const std::vector<int> rows = Selected(selection);
    for (size_t r = 0; r < rows.size(); ++r)
      for (int c = 0; c < 15; ++c) expected[rows[r] * 15 + c] = dy[r * 15 + c];
    EXPECT_EQ(f.data.ReadDiff(), expected);
  }
}

TEST(Filter, ForwardStraightAfterSetUpReadsTheSelector) {
  FilterFixture f({0, 0, 1, 0, 0, 0, 1});
  f.layer->Forward(f.bottom(), f.top());
  EXPECT_EQ(f.top_labels.ReadData(), (std::vector<float>{f.labels.ReadData()[2],
                                                          f.labels.ReadData()[6]}));
}

TEST(Filter, GradientMatchesNumeric) {
  for (const auto& selection : {kSelections[0], kSelections[2]}) {
    FilterFixture f(selection, {7, 1, 1});
    f.layer->Reshape(f.bottom(), f.top());
    CheckGradient(*f.layer, f.bottom(), f.top(), {0, 1});
  }
}

TEST(Filter, Errors) {
  Blob data(TestContext(), {7, 3}), selector(TestContext(), {7, 2}), top(TestContext()),
      other(TestContext());
  try {
    MakeLayer("type: 'Filter'")->SetUp({&data, &selector}, {&top});
    ADD_FAILURE() << "a 7 x 2 selector accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be N or N x 1 x ..., got shape 7 2 (14)"),
              std::string::npos)
        << e.what();
  }
  selector.Reshape({6});
  try {
    MakeLayer("type: 'Filter'")->SetUp({&data, &selector}, {&top});
    ADD_FAILURE() << "6 selector values for 7 rows accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bottom 0 of shape 7 3 (21) must have as many rows"),
              std::string::npos)
        << e.what();
  }
  selector.Reshape({7});
  EXPECT_THROW(MakeLayer("type: 'Filter'")->SetUp({&data, &selector}, {&top, &other}), Error);
  auto layer = MakeLayer("type: 'Filter'");
  layer->SetUp({&data, &selector}, {&top});
  layer->Forward({&data, &selector}, {&top});
  EXPECT_THROW(layer->Backward({&top}, {true, true}, {&data, &selector}), Error);
}

}  // namespace test
}  // namespace dlcaffe
