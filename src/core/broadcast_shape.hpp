// The shape of a blob that Scale and Bias broadcast over an input: num_axes
// axes of x starting at `axis` (num_axes -1: all remaining axes, 0: a scalar),
// as Caffe's ScaleParameter/BiasParameter define it.
#pragma once
#include <string>
#include <vector>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

// `what` ("scale", "bias") and `where` (the layer's error prefix) name the
// culprit in errors.
inline std::vector<int> BroadcastShape(const Blob& x, int axis_param, int num_axes,
                                       const char* what, const std::string& where) {
  const int axis = x.CanonicalAxisIndex(axis_param);
  DLC_REQUIRE(num_axes >= -1, where << "num_axes must be -1 or more, got " << num_axes);
  DLC_REQUIRE(num_axes == -1 || x.num_axes() >= axis + num_axes,
              where << "a " << what << " of " << num_axes << " axes from axis " << axis
                    << " extends past the input " << x.shape_string());
  const auto first = x.shape().begin() + axis;
  const auto last = num_axes == -1 ? x.shape().end() : first + num_axes;
  return std::vector<int>(first, last);
}

}  // namespace dlcaffe
