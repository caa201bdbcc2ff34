// The learnable parameters of a net grouped into buckets in the order in
// which a backward pass finishes their gradients (the layers at the top
// first), so that each bucket can be sent to the other replicas while the
// layers below it still run backward.
#pragma once
#include <cstddef>
#include <vector>

#include "dlcaffe/net.hpp"

namespace dlcaffe {

// A run of one parameter's gradient: floats [offset, offset + count) of
// learnable parameter `param`, at `start` in the flat gradient.
struct GradientPiece {
  int param = 0;  // index into Net::learnable_params()
  size_t offset = 0;
  size_t count = 0;
  size_t start = 0;
};

struct GradientBucket {
  std::vector<GradientPiece> pieces;  // in send order
  size_t start = 0;  // the bucket's first float within the flat gradient
  size_t count = 0;  // floats
  // The bucket's gradients are final once the backward pass has had this
  // layer's turn (Net::set_after_backward).
  int final_after_layer = 0;
};

// Buckets of at most `bucket_bytes` (at least one float), laid out one after
// another in a flat gradient of all learnable parameters. A parameter larger
// than the room left is split over several buckets, so that copying one
// piece to the host, summing another and copying a third back overlap.
// With `taper`, the buckets that backward finishes last are smaller
// (BucketCapacities): the last one's whole exchange comes after backward,
// so it should be short.
std::vector<GradientBucket> PlanGradientBuckets(const Net& net, size_t bucket_bytes,
                                                bool taper = true);

// The buckets' capacities in floats, in send order, for `total` floats and
// buckets of at most `capacity`: without taper, full ones and the rest last;
// with it, from the last bucket up, capacity / 16 (at least 1), doubling up
// to `capacity`, and the first one takes what is left.
std::vector<size_t> BucketCapacities(size_t total, size_t capacity, bool taper);

// The index of the lowest layer whose backward writes learnable parameter
// `param`: a layer that uses it (shared parameters have several), or the
// layer that absorbs such a layer in training (ExecutionPlan::absorbs_after).
std::vector<int> GradientFinalLayers(const Net& net);

}  // namespace dlcaffe
