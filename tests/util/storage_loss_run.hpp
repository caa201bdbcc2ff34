// One forward and backward pass of a loss layer whose bottoms are stored in
// given types, for the mixed-precision loss tests: each runs the layer with
// its activations in 16 bits and in float32 on the same values and compares.
// The loss top is float32, as a 16-bit net keeps it (Layer::KeepsTopInFloat).
#pragma once
#include <string>
#include <vector>

#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {
namespace test {

struct LossBottom {
  std::vector<int> shape;
  std::vector<float> values;
  StorageType type = StorageType::kFloat32;
  bool propagate = false;  // backward writes its gradient
};

struct LossRun {
  float loss = 0;
  // Each bottom's gradient; empty where it was not propagated.
  std::vector<std::vector<float>> diffs;
};

// Makes the layer from `param`, sets it up on the bottoms, writes them, runs
// Forward, then Backward with `weight` (the loss weight) as the loss's diff.
LossRun RunLossInStorage(const std::string& param, const std::vector<LossBottom>& bottoms,
                         float weight);

}  // namespace test
}  // namespace dlcaffe
