// IntegerDivide against C++'s integer division for every sign of dividend
// and divisor, whole numbers up to 2^24 (the exact range of floats), and
// the floor remainder (Python's %) beside C's remainder; no gradient.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error_of.hpp"
#include "util/layer_test_util.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(IntegerDivide, MatchesIntegerArithmetic) {
  const std::vector<long> values = {0, 1, -1, 6, -6, 7, -7, 90, 91, 181, -182, 16777215, -16777215,
                                    16777216, 12345678};
  for (long divisor : {1L, 2L, 7L, -7L, 91L, 16777216L}) {
    for (const char* operation : {"QUOTIENT", "REMAINDER", "FLOOR_REMAINDER"}) {
      SCOPED_TRACE(std::string(operation) + " by " + std::to_string(divisor));
      Blob x(TestContext(), {static_cast<int>(values.size())}), y(TestContext());
      std::vector<float> v(values.begin(), values.end());
      x.WriteData(v);
      auto layer = MakeLayer(std::string("type: 'IntegerDivide' integer_divide_param { operation: ") +
                             operation + " divisor: " + std::to_string(divisor) + " }");
      layer->SetUp({&x}, {&y});
      layer->Forward({&x}, {&y});
      const std::vector<float> got = y.ReadData();
      for (size_t i = 0; i < values.size(); ++i) {
        const long a = values[i];
        long want = std::string(operation) == "QUOTIENT" ? a / divisor : a % divisor;
        if (std::string(operation) == "FLOOR_REMAINDER" && want != 0 && ((want < 0) != (divisor < 0)))
          want += divisor;
        ASSERT_EQ(got[i], static_cast<float>(want)) << a;
      }
      y.SetDiff(1.f);
      x.SetDiff(5.f);
      layer->Backward({&y}, {true}, {&x});
      EXPECT_EQ(x.ReadDiff(), std::vector<float>(values.size(), 0.f));
    }
  }
}

TEST(IntegerDivide, DivisorZeroIsOneClearError) {
  Blob x(TestContext(), {3}), y(TestContext());
  const std::string e = ErrorOf(
      [&] { MakeLayer("type: 'IntegerDivide' integer_divide_param { divisor: 0 }")->SetUp({&x}, {&y}); });
  EXPECT_TRUE(Contains(e, "the divisor is 0")) << e;
}

}  // namespace test
}  // namespace dlcaffe
