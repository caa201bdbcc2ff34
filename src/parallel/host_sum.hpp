// The host's share of the gradient exchange: summing the local replicas'
// copies of a bucket and scaling the result, split over a few threads (one
// thread sums a 25 MB bucket of two replicas at a fraction of the memory
// bandwidth). Every element goes through the same operations in the same
// order whatever the number of threads, so results do not depend on it.
#pragma once
#include <cstddef>
#include <vector>

namespace dlcaffe {

// Threads for `--exchange_threads=0`: half the host's cores, 1 to 8.
int DefaultSumThreads();

// sum[i] = ((sum[i] + others[0][i]) + others[1][i] + ...), then, when
// `scale` is not 1, sum[i] *= scale; for i < count.
void SumInto(float* sum, const std::vector<const float*>& others, size_t count, float scale,
             int threads);

// sum[i] = ((parts[0][i] + parts[1][i]) + ...), then times `scale` when it
// is not 1: SumInto's operations in SumInto's order, with the first part
// read from elsewhere.
void SumOf(float* sum, const std::vector<const float*>& parts, size_t count, float scale,
           int threads);

// to[i] = from[i] for i < count, on several threads.
void CopyFloats(float* to, const float* from, size_t count, int threads);

}  // namespace dlcaffe
