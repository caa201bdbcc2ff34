// For the Backward of a layer whose tops do not depend differentiably on
// (some of) its bottoms: shapes (Crop's reference, PriorBox's map and
// image), boxes chosen by sorting (DetectionOutput, Proposal). Their
// gradient is zero, and it is written where asked for: a Split above such a
// bottom sums it with its other readers' diffs, and fresh memory is not zero
// on a GPU (nor under DLCAFFE_POISON).
#pragma once
#include <vector>

#include "dlcaffe/blob.hpp"

namespace dlcaffe {

inline void WriteZeroGradients(const std::vector<bool>& propagate_down,
                               const std::vector<Blob*>& bottom) {
  for (size_t b = 0; b < bottom.size() && b < propagate_down.size(); ++b)
    if (propagate_down[b]) bottom[b]->SetDiff(0.f);
}

}  // namespace dlcaffe
