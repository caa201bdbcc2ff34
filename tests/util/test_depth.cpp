#include "util/test_depth.hpp"

#include <cstdlib>
#include <cstring>

namespace dlcaffe {
namespace test {

bool NightlyDepth() {
  const char* value = std::getenv("DLCAFFE_NIGHTLY");
  return value && std::strcmp(value, "") != 0 && std::strcmp(value, "0") != 0;
}

int ByDepth(int ci, int nightly) { return NightlyDepth() ? nightly : ci; }
float ByDepth(float ci, float nightly) { return NightlyDepth() ? nightly : ci; }

bool InSample(int index, int stride, int phase) {
  return NightlyDepth() || stride <= 1 || index % stride == phase % stride;
}

}  // namespace test
}  // namespace dlcaffe
