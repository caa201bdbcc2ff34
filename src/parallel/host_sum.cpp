#include "host_sum.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace dlcaffe {

int DefaultSumThreads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 1, 8);
}

namespace {

// Below about 1 MB a thread's start costs more than it saves.
constexpr size_t kMinPerThread = size_t(1) << 18;

void SumRange(float* sum, const float* first, const std::vector<const float*>& others,
              size_t begin, size_t end, float scale) {
  if (first != sum)
    for (size_t i = begin; i < end; ++i) sum[i] = first[i];
  for (const float* other : others)
    for (size_t i = begin; i < end; ++i) sum[i] += other[i];
  if (scale != 1.f)
    for (size_t i = begin; i < end; ++i) sum[i] *= scale;
}

// work(begin, end) over [0, count) in up to `threads` ranges aligned to 16
// floats (a cache line), the calling thread taking the first.
template <typename Work>
void InRanges(size_t count, int threads, const Work& work) {
  const size_t parts = std::clamp<size_t>(count / kMinPerThread, 1, std::max(threads, 1));
  if (parts == 1) return work(0, count);
  const size_t step = (count / parts + 15) / 16 * 16;
  std::vector<std::thread> helpers;
  for (size_t p = 1; p < parts; ++p) {
    const size_t begin = std::min(count, p * step);
    const size_t end = p + 1 == parts ? count : std::min(count, begin + step);
    helpers.emplace_back([&work, begin, end] { work(begin, end); });
  }
  work(0, std::min(count, step));
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace

void SumInto(float* sum, const std::vector<const float*>& others, size_t count, float scale,
             int threads) {
  if (others.empty() && scale == 1.f) return;
  InRanges(count, threads, [&](size_t begin, size_t end) {
    SumRange(sum, sum, others, begin, end, scale);
  });
}

void SumOf(float* sum, const std::vector<const float*>& parts, size_t count, float scale,
           int threads) {
  if (parts.empty()) return;
  const std::vector<const float*> others(parts.begin() + 1, parts.end());
  InRanges(count, threads, [&](size_t begin, size_t end) {
    SumRange(sum, parts[0], others, begin, end, scale);
  });
}

void CopyFloats(float* to, const float* from, size_t count, int threads) {
  InRanges(count, threads, [&](size_t begin, size_t end) {
    std::memcpy(to + begin, from + begin, (end - begin) * sizeof(float));
  });
}

}  // namespace dlcaffe
