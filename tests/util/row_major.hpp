// Row-major coordinates and offsets, for the references of layers that
// address elements by their coordinates (GatherElements, ScatterElements).
#pragma once
#include <vector>

namespace dlcaffe {
namespace test {

// The coordinates of element i of a tensor of `shape`.
inline std::vector<int> Coords(int i, const std::vector<int>& shape) {
  std::vector<int> c(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

// The offset of `coords` in a tensor of `shape`.
inline int Offset(const std::vector<int>& coords, const std::vector<int>& shape) {
  int offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + coords[d];
  return offset;
}

}  // namespace test
}  // namespace dlcaffe
