#include "util/convolution_sums.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace dlcaffe {
namespace test {

ExactSums DirectConvolution(const ConvolutionShape& g, const std::vector<float>& x,
                            const std::vector<float>& w, const std::vector<float>& b,
                            const std::vector<float>& dy, ConvolutionResult which) {
  const int ho = g.out_h(), wo = g.out_w(), cg = g.per_group(), og = g.outputs / g.group;
  const int k = g.kernel;
  const size_t size = which == ConvolutionResult::kTop ? size_t(g.images) * g.outputs * ho * wo
                      : which == ConvolutionResult::kWeightGradient ? w.size()
                                                                    : x.size();
  ExactSums s{std::vector<double>(size), std::vector<double>(size)};
  for (int n = 0; n < g.images; ++n)
    for (int o = 0; o < g.outputs; ++o)
      for (int i = 0; i < ho; ++i)
        for (int j = 0; j < wo; ++j) {
          const size_t top = ((size_t(n) * g.outputs + o) * ho + i) * wo + j;
          if (which == ConvolutionResult::kTop)
            s.value[top] += b[o], s.magnitude[top] += std::fabs(b[o]);
          for (int c = 0; c < cg; ++c)
            for (int ki = 0; ki < k; ++ki)
              for (int kj = 0; kj < k; ++kj) {
                const int h = i * g.stride - g.pad + ki * g.dilation;
                const int v = j * g.stride - g.pad + kj * g.dilation;
                if (h < 0 || h >= g.height || v < 0 || v >= g.width) continue;
                const int channel = o / og * cg + c;
                const size_t xi = ((size_t(n) * g.channels + channel) * g.height + h) * g.width + v;
                const size_t wi = ((size_t(o) * cg + c) * k + ki) * k + kj;
                size_t at = xi;
                double term = double(dy[top]) * w[wi];
                if (which == ConvolutionResult::kTop) {
                  at = top;
                  term = double(w[wi]) * x[xi];
                } else if (which == ConvolutionResult::kWeightGradient) {
                  at = wi;
                  term = double(dy[top]) * x[xi];
                }
                s.value[at] += term;
                s.magnitude[at] += std::fabs(term);
              }
        }
  return s;
}

void ExpectExactSums(const std::vector<float>& got, const ExactSums& want, int terms,
                     double ulp_16, const char* what) {
  ASSERT_EQ(got.size(), want.value.size()) << what;
  bool nonzero = false;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = (terms + 1) * std::ldexp(want.magnitude[i], -24) +
                         (ulp_16 > 0 ? ulp_16 / 2 * std::fabs(want.value[i]) + 0x1p-25 : 0);
    ASSERT_NEAR(got[i], want.value[i], bound * 1.0001 + 1e-30) << what << " [" << i << "]";
    nonzero = nonzero || got[i] != 0.f;
  }
  ASSERT_TRUE(nonzero) << what << ": all zero";
}

}  // namespace test
}  // namespace dlcaffe
