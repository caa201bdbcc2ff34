#include "host_sum.hpp"

#include <algorithm>
#include <thread>

namespace dlcaffe {

int DefaultSumThreads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 1, 8);
}

namespace {

void SumRange(float* sum, const std::vector<const float*>& others, size_t begin, size_t end,
              float scale) {
  for (const float* other : others)
    for (size_t i = begin; i < end; ++i) sum[i] += other[i];
  if (scale != 1.f)
    for (size_t i = begin; i < end; ++i) sum[i] *= scale;
}

}  // namespace

void SumInto(float* sum, const std::vector<const float*>& others, size_t count, float scale,
             int threads) {
  if (others.empty() && scale == 1.f) return;
  // Below about 1 MB a thread's start costs more than it saves.
  constexpr size_t kMinPerThread = size_t(1) << 18;
  const size_t parts = std::clamp<size_t>(count / kMinPerThread, 1, std::max(threads, 1));
  if (parts == 1) return SumRange(sum, others, 0, count, scale);
  // Ranges aligned to 16 floats (a cache line), the last one takes the rest.
  const size_t step = (count / parts + 15) / 16 * 16;
  std::vector<std::thread> helpers;
  for (size_t p = 1; p < parts; ++p) {
    const size_t begin = std::min(count, p * step);
    const size_t end = p + 1 == parts ? count : std::min(count, begin + step);
    helpers.emplace_back(SumRange, sum, std::cref(others), begin, end, scale);
  }
  SumRange(sum, others, 0, std::min(count, step), scale);
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace dlcaffe
