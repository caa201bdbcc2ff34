// Numerical gradient checking shared by every layer test.
//
// The objective is E = sum_t sum_i w_ti * top_t[i] with fixed random weights
// w, so dE/dtop = w. The analytic gradient comes from the layer's Backward
// with top diffs set to w; the numeric one from central differences of E
// computed on the host after Forward. Both bottoms and learnable parameter
// blobs are checked. As in Caffe, values must agree within
// threshold * max(|analytic|, |numeric|, 1).
#pragma once
#include <vector>

#include "dlcaffe/layer.hpp"

namespace dlcaffe {
namespace test {

struct GradientCheckOptions {
  float step = 1e-2f;
  float threshold = 1e-2f;
  // Points within kink_range of kink (in the bottom value) are skipped, for
  // functions that are not differentiable there (ReLU at 0, ...).
  float kink = 0.f;
  float kink_range = -1.f;
  // Check at most this many elements per blob (spread over the blob).
  int max_checks_per_blob = 400;
  // false: differentiate the parameters only, for layers whose bottoms take
  // no gradient (Embed's indices); every bottom gets propagate_down false.
  bool check_bottoms = true;
  bool check_params = true;
  unsigned seed = 1234;
};

// The layer must be SetUp on bottom/top already. `bottoms_to_check` lists the
// bottom indices to differentiate (empty: all, or none with
// options.check_bottoms false).
void CheckGradient(Layer& layer, const std::vector<Blob*>& bottom,
                   const std::vector<Blob*>& top,
                   const std::vector<int>& bottoms_to_check = {},
                   const GradientCheckOptions& options = GradientCheckOptions());

}  // namespace test
}  // namespace dlcaffe
