// The neuron layers' "in place equals out of place" check: a layer run with
// top == bottom must give bitwise the same top, bottom diff and parameter diffs
// as the same layer run with a separate top, from the same input and top diff.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"

namespace dlcaffe {
namespace test {

// Makes two layers from `layer_text` (the in-place one gets the out-of-place
// one's parameter values), fills the input of `shape` with `fill_input`, runs
// Forward and Backward (top diff 0.25 * (i % 7) - 0.5) on each and expects the
// results to be equal. `before_forward`, if given, runs before each Forward
// (e.g. to seed the context's generator for the same dropout mask).
void ExpectInPlaceMatchesOutOfPlace(const std::string& layer_text, const std::vector<int>& shape,
                                    const std::function<void(Blob*)>& fill_input,
                                    const std::function<void()>& before_forward = {});

}  // namespace test
}  // namespace dlcaffe
