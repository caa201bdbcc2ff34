#include "dlcaffe/filler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

// fan_in = count / num, fan_out = count / channels, as in Caffe.
float VarianceScale(const caffe::FillerParameter& filler, const Blob& blob) {
  const int count = blob.count();
  const float fan_in = static_cast<float>(count) / blob.shape(0);
  const float fan_out =
      blob.num_axes() > 1 ? static_cast<float>(count) / blob.shape(1) : count;
  switch (filler.variance_norm()) {
    case caffe::FillerParameter_VarianceNorm_AVERAGE: return (fan_in + fan_out) / 2.f;
    case caffe::FillerParameter_VarianceNorm_FAN_OUT: return fan_out;
    default: return fan_in;
  }
}

// The key of one random fill (filler.cl): one draw of the context's generator.
struct FillKey {
  cl_uint lo, hi;
};
FillKey DrawKey(Context& ctx) {
  const uint64_t key = ctx.rng()();
  return {static_cast<cl_uint>(key & 0xffffffffu), static_cast<cl_uint>(key >> 32)};
}

void FillUniform(Blob* blob, float min, float max) {
  Context& ctx = blob->context();
  const FillKey key = DrawKey(ctx);
  ctx.Launch1D(ctx.Kernel("filler.cl", "", "fill_uniform"), blob->count(), blob->count(),
               key.lo, key.hi, min, max, blob->data());
}

void FillGaussian(Blob* blob, float mean, float std, float keep) {
  Context& ctx = blob->context();
  const FillKey key = DrawKey(ctx);
  ctx.Launch1D(ctx.Kernel("filler.cl", "", "fill_gaussian"), blob->count(), blob->count(),
               key.lo, key.hi, mean, std, keep, blob->data());
}

}  // namespace

void FillBlob(const caffe::FillerParameter& filler, Blob* blob) {
  const int count = blob->count();
  if (count == 0) return;
  Context& ctx = blob->context();
  const std::string& type = filler.type();
  if (type == "constant") {
    blob->SetData(filler.value());
  } else if (type == "uniform") {
    FillUniform(blob, filler.min(), filler.max());
  } else if (type == "gaussian") {
    // Sparse gaussian: keep each weight with probability sparse / num_outputs.
    float keep = 1.f;
    if (filler.sparse() >= 0) {
      DLC_REQUIRE(blob->num_axes() >= 1, "sparse gaussian filler needs an axis");
      keep = std::min(1.f, static_cast<float>(filler.sparse()) / blob->shape(0));
    }
    FillGaussian(blob, filler.mean(), filler.std(), keep);
  } else if (type == "xavier") {
    const float scale = std::sqrt(3.f / VarianceScale(filler, *blob));
    FillUniform(blob, -scale, scale);
  } else if (type == "msra") {
    FillGaussian(blob, 0.f, std::sqrt(2.f / VarianceScale(filler, *blob)), 1.f);
  } else if (type == "positive_unitball") {
    // Uniform in [0, 1), then each row (over axes 1..) normalised to sum 1.
    FillUniform(blob, 0.f, 1.f);
    const int rows = blob->shape(0);
    ctx.Launch1D(ctx.Kernel("filler.cl", "", "fill_normalize_rows"), rows, rows,
                 count / rows, blob->data());
  } else if (type == "bilinear") {
    // Upsampling kernel for Deconvolution: weights (C, 1, K, K), K square.
    DLC_REQUIRE(blob->num_axes() == 4 && blob->shape(2) == blob->shape(3),
                "bilinear filler needs a 4-D blob with square kernels, got "
                    << blob->shape_string());
    ctx.Launch1D(ctx.Kernel("filler.cl", "", "fill_bilinear"), count, count, blob->shape(3),
                 blob->data());
  } else {
    DLC_FAIL("unknown filler type '" << type
                                     << "' (known: constant, uniform, gaussian, xavier, "
                                        "msra, positive_unitball, bilinear)");
  }
  blob->MarkDataWritten();  // the kernels above wrote it on the device
}

}  // namespace dlcaffe
