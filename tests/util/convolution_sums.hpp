// A 2-D convolution's results from the definition, in double, for tests
// whose inputs are values of a 16-bit type: their products are exact in
// float, so only the float sums' order (and a 16-bit result's rounding)
// separates the layer's results from these.
#pragma once
#include <vector>

namespace dlcaffe {
namespace test {

struct ConvolutionShape {
  int images, channels, height, width, outputs, kernel, stride, pad, group, dilation;
  int extent() const { return dilation * (kernel - 1) + 1; }
  int out_h() const { return (height + 2 * pad - extent()) / stride + 1; }
  int out_w() const { return (width + 2 * pad - extent()) / stride + 1; }
  int per_group() const { return channels / group; }
};

// Each value with the sum of the magnitudes of its terms.
struct ExactSums {
  std::vector<double> value, magnitude;
};

enum class ConvolutionResult { kTop, kWeightGradient, kBottomGradient };

// The top (x * w + b), weight gradient or bottom gradient (from the top
// diff dy) of NCHW blobs and Caffe's weights [outputs][channels/group][k][k].
ExactSums DirectConvolution(const ConvolutionShape& g, const std::vector<float>& x,
                            const std::vector<float>& w, const std::vector<float>& b,
                            const std::vector<float>& dy, ConvolutionResult which);

// Float sums of exact products in any order: within (terms + 1) float
// roundings of the magnitudes; a 16-bit result also within half its ulp
// (`ulp_16`, relative; half a float16 subnormal's spacing near zero). And
// not all zero.
void ExpectExactSums(const std::vector<float>& got, const ExactSums& want, int terms,
                     double ulp_16, const char* what);

}  // namespace test
}  // namespace dlcaffe
