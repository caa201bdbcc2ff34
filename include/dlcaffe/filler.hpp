// Weight initialisation, as Caffe's fillers: constant, uniform, gaussian,
// xavier, msra, positive_unitball, bilinear. Values are computed on the device
// (filler.cl) from one key per fill drawn from the context's seeded generator,
// so a seed gives the same weights on every device and filling costs one
// launch (drawing ResNet-50's 25 M weights on the host took 0.9 s).
#pragma once
#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/blob.hpp"

namespace dlcaffe {

void FillBlob(const caffe::FillerParameter& filler, Blob* blob);

}  // namespace dlcaffe
