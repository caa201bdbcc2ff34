#include "dlcaffe/filler.hpp"

#include <cmath>
#include <random>
#include <vector>

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

}  // namespace

void FillBlob(const caffe::FillerParameter& filler, Blob* blob) {
  const int count = blob->count();
  if (count == 0) return;
  Rng& rng = blob->context().rng();
  std::vector<float> v(count);
  const std::string& type = filler.type();
  if (type == "constant") {
    std::fill(v.begin(), v.end(), filler.value());
  } else if (type == "uniform") {
    std::uniform_real_distribution<float> dist(filler.min(), filler.max());
    for (float& x : v) x = dist(rng);
  } else if (type == "gaussian") {
    std::normal_distribution<float> dist(filler.mean(), filler.std());
    for (float& x : v) x = dist(rng);
    // Sparse gaussian: keep each weight with probability sparse / num_outputs.
    if (filler.sparse() >= 0) {
      DLC_REQUIRE(blob->num_axes() >= 1, "sparse gaussian filler needs an axis");
      const float keep = static_cast<float>(filler.sparse()) / blob->shape(0);
      std::bernoulli_distribution coin(std::min(1.f, keep));
      for (float& x : v) if (!coin(rng)) x = 0.f;
    }
  } else if (type == "xavier") {
    const float scale = std::sqrt(3.f / VarianceScale(filler, *blob));
    std::uniform_real_distribution<float> dist(-scale, scale);
    for (float& x : v) x = dist(rng);
  } else if (type == "msra") {
    const float std = std::sqrt(2.f / VarianceScale(filler, *blob));
    std::normal_distribution<float> dist(0.f, std);
    for (float& x : v) x = dist(rng);
  } else if (type == "positive_unitball") {
    // Uniform in [0, 1), then each row (over axes 1..) normalised to sum 1.
    std::uniform_real_distribution<float> dist(0.f, 1.f);
    for (float& x : v) x = dist(rng);
    const int rows = blob->shape(0), dim = count / rows;
    for (int r = 0; r < rows; ++r) {
      double sum = 0;
      for (int j = 0; j < dim; ++j) sum += v[r * dim + j];
      for (int j = 0; j < dim; ++j) v[r * dim + j] /= static_cast<float>(sum);
    }
  } else if (type == "bilinear") {
    // Upsampling kernel for Deconvolution: weights (C, 1, K, K), K square.
    DLC_REQUIRE(blob->num_axes() == 4 && blob->shape(2) == blob->shape(3),
                "bilinear filler needs a 4-D blob with square kernels, got "
                    << blob->shape_string());
    const int k = blob->shape(3);
    const int f = (k + 1) / 2;
    const float c = (2 * f - 1 - f % 2) / (2.f * f);
    for (int i = 0; i < count; ++i) {
      const float x = i % k, y = (i / k) % k;
      v[i] = (1 - std::fabs(x / f - c)) * (1 - std::fabs(y / f - c));
    }
  } else {
    DLC_FAIL("unknown filler type '" << type
                                     << "' (known: constant, uniform, gaussian, xavier, "
                                        "msra, positive_unitball, bilinear)");
  }
  blob->WriteData(v);
}

}  // namespace dlcaffe
