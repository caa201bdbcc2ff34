// SetFloatsOfMany (include/dlcaffe/math.hpp): small buffers eight per
// launch, large ones by a fill command each, every one set over its own count
// and left alone past it, for any number of buffers (empty ones, a last
// launch of fewer than eight, and large ones between small ones included).
#include <gtest/gtest.h>

#include <vector>

#include "dlcaffe/error.hpp"
#include "dlcaffe/math.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(SetFloatsOfMany, SetsEachBufferOverItsCountOnly) {
  Context& ctx = TestContext();
  const float kUntouched = -7.f, kValue = 2.5f;
  const int kLarge = (1 << 16) + 5;  // filled on its own (math.cpp)
  for (int buffers : {1, 8, 19}) {
    SCOPED_TRACE(buffers);
    std::vector<BufferPtr> storage;
    std::vector<cl_mem> mems;
    std::vector<int> counts;
    for (int b = 0; b < buffers; ++b) {
      // A few empty ones, and with more than one buffer every seventh large.
      const int count = buffers > 1 && b % 7 == 1 ? kLarge + b
                                                  : (b * 37 + 5) % 61 * (b % 5 == 3 ? 0 : 1);
      const int size = count + 3;
      storage.push_back(ctx.Allocate(size * sizeof(float)));
      const std::vector<float> fill(size, kUntouched);
      ctx.Write(storage.back()->mem(), 0, size * sizeof(float), fill.data());
      mems.push_back(storage.back()->mem());
      counts.push_back(count);
    }
    SetFloatsOfMany(ctx, mems, counts, kValue);
    for (int b = 0; b < buffers; ++b) {
      std::vector<float> got(counts[b] + 3);
      ctx.Read(mems[b], 0, got.size() * sizeof(float), got.data());
      for (int i = 0; i < static_cast<int>(got.size()); ++i)
        ASSERT_EQ(got[i], i < counts[b] ? kValue : kUntouched) << "buffer " << b << " at " << i;
    }
  }
}

TEST(SetFloatsOfMany, CountsMustMatchBuffers) {
  Context& ctx = TestContext();
  BufferPtr one = ctx.Allocate(4 * sizeof(float));
  EXPECT_THROW(SetFloatsOfMany(ctx, {one->mem()}, {4, 4}, 0.f), Error);
}

}  // namespace test
}  // namespace dlcaffe
