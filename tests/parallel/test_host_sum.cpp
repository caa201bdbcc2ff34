// The host's sum of a gradient bucket over local replicas (host_sum.hpp):
// bit for bit the plain loop (each element summed in replica order, then
// scaled), whatever the number of threads and however the count splits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "../../src/parallel/host_sum.hpp"

namespace dlcaffe {
namespace test {
namespace {

std::vector<float> Random(size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(-3.f, 3.f);
  std::vector<float> v(count);
  for (float& x : v) x = value(gen);
  return v;
}

TEST(HostSum, MatchesThePlainLoopBitForBit) {
  // 1 << 18 floats is the least a thread takes: these counts give 1, 2 and
  // 3 parts with ragged ends.
  for (size_t count : {size_t(0), size_t(1), size_t(37), (size_t(1) << 19) + 5,
                       (size_t(3) << 18) + 17}) {
    for (int others_count : {0, 1, 3}) {
      for (float scale : {1.f, 1.f / 3.f}) {
        std::vector<std::vector<float>> others;
        std::vector<const float*> pointers;
        for (int j = 0; j < others_count; ++j) {
          others.push_back(Random(count, 10 + j));
          pointers.push_back(others.back().data());
        }
        const std::vector<float> start = Random(count, 1);
        std::vector<float> want = start;
        for (size_t i = 0; i < count; ++i) {
          for (const auto& other : others) want[i] += other[i];
          if (scale != 1.f) want[i] *= scale;
        }
        for (int threads : {1, 2, 3, 8}) {
          std::vector<float> sum = start;
          SumInto(sum.data(), pointers, count, scale, threads);
          EXPECT_EQ(0, std::memcmp(sum.data(), want.data(), count * sizeof(float)))
              << count << " floats, " << others_count << " others, scale " << scale << ", "
              << threads << " threads";
        }
      }
    }
  }
}

// SumOf, the shared-memory sums' form (the first part read from elsewhere),
// gives SumInto's bits for the same parts; CopyFloats copies exactly.
TEST(HostSum, SumOfAndCopyFloatsMatchSumIntoAndTheSource) {
  for (size_t count : {size_t(1), size_t(37), (size_t(1) << 19) + 5}) {
    for (int parts_count : {1, 2, 4}) {
      std::vector<std::vector<float>> parts;
      std::vector<const float*> pointers;
      for (int j = 0; j < parts_count; ++j) {
        parts.push_back(Random(count, 20 + j));
        pointers.push_back(parts.back().data());
      }
      std::vector<float> want = parts[0];
      SumInto(want.data(), std::vector<const float*>(pointers.begin() + 1, pointers.end()),
              count, 0.25f, 1);
      for (int threads : {1, 3}) {
        std::vector<float> sum(count, -1.f);
        SumOf(sum.data(), pointers, count, 0.25f, threads);
        EXPECT_EQ(0, std::memcmp(sum.data(), want.data(), count * sizeof(float)))
            << count << " floats, " << parts_count << " parts, " << threads << " threads";
        std::vector<float> copy(count, -1.f);
        CopyFloats(copy.data(), parts.back().data(), count, threads);
        EXPECT_EQ(0, std::memcmp(copy.data(), parts.back().data(), count * sizeof(float)));
      }
    }
  }
}

TEST(HostSum, DefaultThreadsStayWithinOneToEight) {
  EXPECT_GE(DefaultSumThreads(), 1);
  EXPECT_LE(DefaultSumThreads(), 8);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
