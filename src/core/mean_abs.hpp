// The mean absolute value of a blob's data or diff, as Caffe's debug_info
// logs it (Net, and the recurrent layers' unrolled nets). It reads back to
// the host: for debugging only.
#pragma once
#include <cmath>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

inline float MeanAbs(const Blob& blob, bool diff) {
  if (blob.count() == 0) return 0.f;
  if (blob.storage_type() != StorageType::kFloat32) {  // widened on the host
    double sum = 0;
    for (float v : diff ? blob.ReadDiff() : blob.ReadData()) sum += std::fabs(v);
    return static_cast<float>(sum / blob.count());
  }
  return Asum(blob.context(), blob.count(), diff ? blob.diff() : blob.data(), 0) /
         blob.count();
}

}  // namespace dlcaffe
