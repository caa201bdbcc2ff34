// One forward and backward pass of a layer whose bottom and top are stored
// in a given type, for the mixed-precision layer tests: each runs the layer
// in 16 bits and in float32 on the same values and compares.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dlcaffe/layer.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {
namespace test {

struct StorageRunInputs {
  StorageRunInputs(std::vector<int> shape, std::vector<float> x, std::vector<float> dy,
                   std::vector<float> params = {}, bool in_place = false)
      : shape(std::move(shape)),
        x(std::move(x)),
        dy(std::move(dy)),
        params(std::move(params)),
        in_place(in_place) {}
  std::vector<int> shape;  // the bottom's
  std::vector<float> x;    // the bottom's data
  std::vector<float> dy;   // the top's diff (backward only)
  // Written into the parameter blobs in order (each takes its count);
  // empty leaves them as the layer filled them.
  std::vector<float> params;
  bool in_place = false;  // the top is the bottom
  bool backward = true;
  // Runs just before Forward (e.g. to seed the context).
  std::function<void()> before_forward;
  // Runs after Forward has been read back, before Backward, with the top
  // (e.g. to store it as a 16-bit layer would have).
  std::function<void(Blob& top)> after_forward;
};

struct StorageRun {
  std::vector<float> top, bottom_diff;
  // Each parameter blob's data after the pass (running statistics) and its
  // diff (zeroed before backward).
  std::vector<std::vector<float>> param_data, param_diffs;
};

// Makes the layer from `param`, stores bottom and top as `type`, sets it up,
// writes the inputs, runs Forward (and Backward with propagate_down) and
// reads everything back as float. The layer's forward_math and
// backward_math are FLOAT unless `param` sets them: these tests check
// storage, each 16-bit result the rounding of the float32 one bit for bit,
// and on a device with a matrix engine the storage type's math (the default)
// would round the float weights too (tests/core/test_gemm_mma.cpp checks
// that math).
StorageRun RunLayerInStorage(const std::string& param, StorageType type,
                             const StorageRunInputs& in);

}  // namespace test
}  // namespace dlcaffe
