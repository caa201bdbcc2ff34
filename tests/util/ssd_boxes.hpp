// Caffe SSD's box arithmetic (bbox_util.cpp: DecodeBBox, BBoxSize,
// JaccardOverlap of normalized boxes) written out for the detection layers'
// reference implementations in the tests, in float and in the same order of
// operations.
#pragma once
#include <algorithm>
#include <cmath>

namespace dlcaffe {
namespace test {

struct Box {
  float xmin, ymin, xmax, ymax;
};

inline Box Decode(const Box& prior, const float* var, const float* d, int code, bool in_target) {
  const float pw = prior.xmax - prior.xmin, ph = prior.ymax - prior.ymin;
  const float v[4] = {in_target ? 1.f : var[0], in_target ? 1.f : var[1], in_target ? 1.f : var[2],
                      in_target ? 1.f : var[3]};
  if (code == 1)
    return {prior.xmin + v[0] * d[0], prior.ymin + v[1] * d[1], prior.xmax + v[2] * d[2], prior.ymax + v[3] * d[3]};
  if (code == 2) {
    const float pcx = (prior.xmin + prior.xmax) / 2.f, pcy = (prior.ymin + prior.ymax) / 2.f;
    const float cx = v[0] * d[0] * pw + pcx, cy = v[1] * d[1] * ph + pcy;
    const float w = std::exp(v[2] * d[2]) * pw, h = std::exp(v[3] * d[3]) * ph;
    return {cx - w / 2.f, cy - h / 2.f, cx + w / 2.f, cy + h / 2.f};
  }
  return {prior.xmin + v[0] * d[0] * pw, prior.ymin + v[1] * d[1] * ph, prior.xmax + v[2] * d[2] * pw,
          prior.ymax + v[3] * d[3] * ph};
}

inline float Size(const Box& b) {
  return b.xmax < b.xmin || b.ymax < b.ymin ? 0.f : (b.xmax - b.xmin) * (b.ymax - b.ymin);
}

inline float Overlap(const Box& a, const Box& b) {
  if (b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin) return 0.f;
  const float inter = (std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin)) *
                      (std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin));
  return inter / (Size(a) + Size(b) - inter);
}

}  // namespace test
}  // namespace dlcaffe
