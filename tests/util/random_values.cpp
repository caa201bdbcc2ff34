#include "util/random_values.hpp"

#include <random>

namespace dlcaffe {
namespace test {

std::vector<float> RandomValues(size_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace test
}  // namespace dlcaffe
