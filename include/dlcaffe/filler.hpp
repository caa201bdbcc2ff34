// Weight initialisation, as Caffe's fillers: constant, uniform, gaussian,
// xavier, msra, positive_unitball, bilinear. Values are drawn on the host from
// the context's seeded generator and written to the blob once at setup.
#pragma once
#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/blob.hpp"

namespace dlcaffe {

void FillBlob(const caffe::FillerParameter& filler, Blob* blob);

}  // namespace dlcaffe
