// Reproducible test values: n floats uniform in [lo, hi) from a seed.
#pragma once
#include <cstddef>
#include <vector>

namespace dlcaffe {
namespace test {

std::vector<float> RandomValues(size_t n, unsigned seed, float lo = -1.f, float hi = 1.f);

}  // namespace test
}  // namespace dlcaffe
