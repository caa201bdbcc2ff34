// The buffer pool: a released buffer serves a later request of its size
// class, or of a smaller one down to half its size (a pass's transient
// buffers come in many sizes); a request under half takes a new buffer, so
// that a small blob never holds a large one.
#include <gtest/gtest.h>

#include <memory>

#include "dlcaffe/buffer_pool.hpp"
#include "dlcaffe/context.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

TEST(BufferPool, AnIdleBufferServesRequestsDownToHalfItsSize) {
  auto pool = std::make_shared<BufferPool>(TestContext().cl());
  const size_t mib = 1 << 20;
  cl_mem first;
  {
    BufferPtr buffer = pool->Acquire(mib);
    first = buffer->mem();
    EXPECT_EQ(pool->bytes_in_use(), mib);
  }
  EXPECT_EQ(pool->bytes_idle(), mib);
  {
    BufferPtr smaller = pool->Acquire(mib / 2 + 4096);  // within twice: reused whole
    EXPECT_EQ(smaller->mem(), first);
    EXPECT_EQ(smaller->bytes(), mib);
    EXPECT_EQ(pool->bytes_idle(), 0u);
    EXPECT_EQ(pool->bytes_in_use(), mib);
  }
  {
    BufferPtr small = pool->Acquire(mib / 2 - 65536);  // under half: a buffer of its own
    EXPECT_NE(small->mem(), first);
    EXPECT_LT(small->bytes(), mib / 2);
    EXPECT_EQ(pool->bytes_idle(), mib);
  }
  {
    BufferPtr larger = pool->Acquire(mib + 65536);  // an idle buffer never serves a larger one
    EXPECT_NE(larger->mem(), first);
  }
  pool->Trim();
  EXPECT_EQ(pool->bytes_idle(), 0u);
}

}  // namespace test
}  // namespace dlcaffe
