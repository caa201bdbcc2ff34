// NonZero against a plain reference on odd shapes (NaN counts as not 0,
// -0 as 0); its top sized by the data in Forward, empty where nothing is
// found; in a Net, the layers after an empty top follow it through passes
// that find nothing and passes that find something.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dlcaffe/net.hpp"
#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// Row-major coordinates of the elements not 0: rank x K.
std::vector<float> Reference(const std::vector<float>& x, const std::vector<int>& shape) {
  std::vector<std::vector<float>> rows(shape.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == 0.f) continue;
    size_t rest = i;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      rows[d].push_back(static_cast<float>(rest % shape[d]));
      rest /= shape[d];
    }
  }
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

}  // namespace

TEST(NonZero, MatchesTheReferenceOnOddShapes) {
  // More elements than a work-group so that the compaction spans chunks.
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{7}, {3, 5, 4}, {2, 1, 300, 3}}) {
    Blob x(TestContext(), shape), top(TestContext());
    std::vector<float> v(x.count());
    for (size_t i = 0; i < v.size(); ++i) v[i] = (i * 7) % 5 == 0 ? 0.f : float(i % 13) - 6.f;
    v[1] = NAN;
    if (v.size() > 2) v[2] = -0.f;
    x.WriteData(v);
    auto layer = MakeLayer("type: 'NonZero'");
    layer->SetUp({&x}, {&top});
    layer->Forward({&x}, {&top});
    const std::vector<float> want = Reference(v, shape);
    ASSERT_EQ(top.shape(0), static_cast<int>(shape.size()));
    ASSERT_EQ(top.count(), static_cast<int>(want.size()));
    EXPECT_EQ(top.ReadData(), want);
  }
}

TEST(NonZero, FindsNothingAsAnEmptyTop) {
  Blob x(TestContext(), {4, 6}), top(TestContext());
  x.SetData(0.f);
  auto layer = MakeLayer("type: 'NonZero'");
  layer->SetUp({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 0}));
  // And sizes again when the data changes.
  x.WriteData(std::vector<float>(24, 1.f));
  layer->Reshape({&x}, {&top});
  layer->Forward({&x}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 24}));
}

TEST(NonZero, NetFollowsTheFoundCountThroughEmptyPasses) {
  Net net(NetFromText(R"(
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 6 } } }
    layer { name: 'nz' type: 'NonZero' bottom: 'x' top: 'found' }
    layer { name: 'twice' type: 'Power' bottom: 'found' top: 'doubled'
            power_param { scale: 2 } }
    layer { name: 'count' type: 'Shape' bottom: 'doubled' top: 'count'
            shape_param { size: true } })",
                      caffe::TEST),
          TestContext());
  const std::vector<std::vector<float>> inputs = {
      {0, 3, 0, 0, 5, 1}, {0, 0, 0, 0, 0, 0}, {2, 0, 0, 0, 0, 4}};
  for (const auto& x : inputs) {
    net.blob_by_name("x")->WriteData(x);
    net.Forward();
    std::vector<float> doubled;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != 0.f) doubled.push_back(2.f * i);
    EXPECT_EQ(net.blob_by_name("doubled")->count(), static_cast<int>(doubled.size()));
    if (!doubled.empty()) EXPECT_EQ(net.blob_by_name("doubled")->ReadData(), doubled);
    EXPECT_EQ(net.blob_by_name("count")->ReadData(), std::vector<float>{float(doubled.size())});
  }
}

TEST(NonZero, ScalarIsOneClearError) {
  Blob x(TestContext(), std::vector<int>{}), top(TestContext());
  const std::string e = ErrorOf([&] { MakeLayer("type: 'NonZero'")->SetUp({&x}, {&top}); });
  EXPECT_TRUE(Contains(e, "at least one axis")) << e;
}

}  // namespace test
}  // namespace dlcaffe
