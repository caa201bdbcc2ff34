// The priors bottom of Caffe SSD's DetectionOutput and MultiBoxLoss:
// PriorBox's (or a Concat of them) 1 x 2 x priors * 4, the boxes then their
// variances.
#pragma once
#include <string>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

// The number of priors; throws naming the layer (`where`) for another shape.
inline int PriorCount(const Blob& prior, const std::string& where) {
  DLC_REQUIRE(prior.num_axes() >= 3 && prior.shape(0) == 1 && prior.shape(1) == 2 &&
                  prior.count(2) % 4 == 0,
              where << "bottom 2 (the priors) must be PriorBox's 1 x 2 x priors * 4, got "
                    << prior.shape_string());
  return prior.count(2) / 4;
}

}  // namespace dlcaffe
