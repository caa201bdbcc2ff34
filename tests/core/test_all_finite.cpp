// AllFinite (include/dlcaffe/math.hpp): dynamic loss scaling's overflow
// check over every gradient buffer, on the device with one flag read back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/math.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

TEST(AllFinite, FindsOneInfOrNaNAnywhereInAnyBuffer) {
  Context& ctx = TestContext();
  const std::vector<int> counts = {1, 13, 127, 70001, 0};
  std::vector<std::unique_ptr<Blob>> blobs;
  std::vector<cl_mem> mems;
  for (int count : counts) {
    blobs.emplace_back(new Blob(ctx, {std::max(count, 1)}));
    blobs.back()->SetData(std::numeric_limits<float>::max());  // large is still finite
    mems.push_back(blobs.back()->data());
  }
  EXPECT_TRUE(AllFinite(ctx, mems, counts));
  const float kBad[] = {std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()};
  for (size_t b = 0; b + 1 < counts.size(); ++b) {
    for (int at : {0, counts[b] / 2, counts[b] - 1}) {
      for (float bad : kBad) {
        SCOPED_TRACE("buffer " + std::to_string(b) + " at " + std::to_string(at) + " value " +
                     std::to_string(bad));
        blobs[b]->WriteData(&bad, 1, at);
        EXPECT_FALSE(AllFinite(ctx, mems, counts));
        const float fine = 1.f;
        blobs[b]->WriteData(&fine, 1, at);
        EXPECT_TRUE(AllFinite(ctx, mems, counts));
      }
    }
  }
  // Past a buffer's count is not looked at: the last one counts 0.
  const float inf = std::numeric_limits<float>::infinity();
  blobs.back()->WriteData(&inf, 1, 0);
  EXPECT_TRUE(AllFinite(ctx, mems, counts));
  EXPECT_THROW(AllFinite(ctx, mems, {1, 2}), Error);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
