// Round in every mode against <cmath> (halves, negatives, whole numbers,
// values beyond 2^23); its gradient is 0.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(Round, EveryModeMatchesCmath) {
  const std::vector<float> v = {0.f, -0.f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.49999997f,
                                1.2f, -1.2f, 3.f, -3.f, 8388609.f, -12345.75f, 1e-8f};
  struct Mode {
    const char* name;
    float (*reference)(float);
  };
  const std::vector<Mode> modes = {{"FLOOR", [](float x) { return std::floor(x); }},
                                   {"CEIL", [](float x) { return std::ceil(x); }},
                                   {"HALF_EVEN", [](float x) { return std::nearbyint(x); }},
                                   {"TRUNCATE", [](float x) { return std::trunc(x); }}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.name);
    Blob x(TestContext(), {4, 4}), y(TestContext());
    x.WriteData(v);
    auto layer = MakeLayer(std::string("type: 'Round' round_param { mode: ") + m.name + " }");
    layer->SetUp({&x}, {&y});
    layer->Forward({&x}, {&y});
    const std::vector<float> got = y.ReadData();
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], m.reference(v[i])) << v[i];
    y.SetDiff(1.f);
    layer->Backward({&y}, {true}, {&x});
    EXPECT_EQ(x.ReadDiff(), std::vector<float>(v.size(), 0.f));
  }
}

}  // namespace test
}  // namespace dlcaffe
