// StridedGather and StridedScatter (core/strided_copy.hpp) against a plain
// host loop over the view as given, in float and 16-bit elements. The views
// are chosen to take each of the kernel's widths: a contiguous last axis in
// whole, aligned vectors of 8, 4 and 2 elements, and the element-wise kernel
// where a vector would start off its boundary (the base, an outer stride) or
// the last axis is reversed or broadcast. A scatter leaves the strided
// buffer's other elements as they were.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../src/core/strided_copy.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

struct Case {
  const char* what;
  StridedView view;
  int strided_count;  // elements of the strided buffer
};

// The strided element of dense element i, from the view as given.
int Place(const StridedView& v, int i) {
  int place = v.base;
  for (int d = static_cast<int>(v.size.size()) - 1; d >= 0; --d) {
    place += (i % v.size[d]) * v.stride[d];
    i /= v.size[d];
  }
  return place;
}

int Count(const StridedView& v) {
  int n = 1;
  for (int s : v.size) n *= s;
  return n;
}

std::vector<Case> Cases() {
  return {
      // dense [5][3][24] from a [3][5][24] buffer (a transpose of the outer
      // axes): rows of 24 contiguous elements.
      {"rows of 24", {{5, 3, 24}, {24, 120, 1}, 0}, 360},
      {"rows of 24 from 8 on", {{5, 3, 24}, {24, 120, 1}, 8}, 368},
      {"rows of 24 from 4 on", {{5, 3, 24}, {24, 120, 1}, 4}, 364},
      {"rows of 24 from 3 on", {{5, 3, 24}, {24, 120, 1}, 3}, 363},
      {"rows of 12 of 36", {{7, 12}, {36, 1}, 12}, 264},
      {"rows of 6 of 10", {{3, 4, 6}, {40, 10, 1}, 2}, 120},
      {"rows of 8 at odd strides", {{4, 8}, {13, 1}, 0}, 47},
      {"reversed rows", {{6, 16}, {16, -1}, 15}, 96},
      {"outer broadcast", {{4, 3, 16}, {0, 16, 1}, 0}, 48},
      {"last axis broadcast", {{5, 8}, {1, 0}, 0}, 5},
      {"a slice of every other column", {{9, 7}, {14, 2}, 1}, 126},
      {"one element", {{1, 1}, {5, 1}, 3}, 4},
  };
}

template <typename T>
std::vector<T> Random(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> values(n);
  for (T& v : values) {
    const uint32_t bits = rng();
    std::memcpy(&v, &bits, sizeof(T));
    if (sizeof(T) == 4) v = static_cast<T>(static_cast<float>(bits % 100000) - 50000.f);
  }
  return values;
}

template <typename T>
void CheckGather(StorageType type) {
  Context& ctx = TestContext();
  for (const Case& c : Cases()) {
    SCOPED_TRACE(std::string(c.what) + " " + StorageTypeName(type));
    const int n = Count(c.view);
    const std::vector<T> strided = Random<T>(c.strided_count, 7);
    BufferPtr src = ctx.Allocate(strided.size() * sizeof(T));
    BufferPtr dst = ctx.Allocate(n * sizeof(T));
    ctx.Write(src->mem(), 0, strided.size() * sizeof(T), strided.data());
    StridedGather(ctx, c.view, src->mem(), dst->mem(), type);
    std::vector<T> dense(n);
    ctx.Read(dst->mem(), 0, n * sizeof(T), dense.data());
    for (int i = 0; i < n; ++i) {
      const int place = Place(c.view, i);
      ASSERT_TRUE(place >= 0 && place < c.strided_count) << "the case's view leaves its buffer";
      ASSERT_EQ(0, std::memcmp(&dense[i], &strided[place], sizeof(T))) << "dense " << i;
    }
  }
}

template <typename T>
void CheckScatter(StorageType type) {
  Context& ctx = TestContext();
  for (const Case& c : Cases()) {
    bool distinct = true;  // a scatter's places must be distinct
    for (int s : c.view.stride) distinct = distinct && s != 0;
    if (!distinct) continue;
    SCOPED_TRACE(std::string(c.what) + " " + StorageTypeName(type));
    const int n = Count(c.view);
    const std::vector<T> dense = Random<T>(n, 11), before = Random<T>(c.strided_count, 13);
    BufferPtr src = ctx.Allocate(n * sizeof(T));
    BufferPtr dst = ctx.Allocate(before.size() * sizeof(T));
    ctx.Write(src->mem(), 0, n * sizeof(T), dense.data());
    ctx.Write(dst->mem(), 0, before.size() * sizeof(T), before.data());
    StridedScatter(ctx, c.view, src->mem(), dst->mem(), type);
    std::vector<T> after(before.size());
    ctx.Read(dst->mem(), 0, after.size() * sizeof(T), after.data());
    std::vector<T> expected = before;
    for (int i = 0; i < n; ++i) expected[Place(c.view, i)] = dense[i];
    ASSERT_EQ(0, std::memcmp(after.data(), expected.data(), after.size() * sizeof(T)));
  }
}

TEST(StridedCopy, GatherMovesEveryElementOfTheView) {
  CheckGather<float>(StorageType::kFloat32);
  CheckGather<uint16_t>(StorageType::kFloat16);
  CheckGather<uint16_t>(StorageType::kBFloat16);
}

TEST(StridedCopy, ScatterWritesTheViewAndNothingElse) {
  CheckScatter<float>(StorageType::kFloat32);
  CheckScatter<uint16_t>(StorageType::kFloat16);
  CheckScatter<uint16_t>(StorageType::kBFloat16);
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
