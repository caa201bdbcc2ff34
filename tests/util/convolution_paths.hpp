// The convolution paths the Convolution and Deconvolution tests run every
// case through, whatever this device would pick: the two kernel shapes
// (RunOptions::kernel_shape: on the CPU shape the layout kernels take a plane
// per work-item, on the GPU shape an element), and for the GPU shape the
// GEMM's image columns read implicitly (no im2col buffer) or through im2col
// ("planes", the CPU shape, always uses im2col).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "util/test_context.hpp"
#include "util/test_depth.hpp"

namespace dlcaffe {
namespace test {

class ConvolutionPathTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string path = GetParam();
    SetTestOption("kernel_shape", path == "planes" ? "cpu" : "gpu");
    SetTestOption("implicit_gemm", path == "elements" ? "on" : "off");
  }
  void TearDown() override {
    ResetTestOption("kernel_shape");
    ResetTestOption("implicit_gemm");
  }
};

#define DLC_INSTANTIATE_CONVOLUTION_PATHS(suite)                                   \
  INSTANTIATE_TEST_SUITE_P(KernelShapes, suite,                                     \
                           ::testing::Values("planes", "elements", "elements_im2col"), \
                           [](const ::testing::TestParamInfo<const char*>& info) {   \
                             return std::string(info.param);                         \
                           })

// The paths of DLC_INSTANTIATE_CONVOLUTION_PATHS, in its order, that a suite
// runs on: all of them under DLCAFFE_NIGHTLY=1, else those CI samples
// (util/test_depth.hpp).
inline std::vector<const char*> SampledPaths(const std::vector<std::string>& ci) {
  std::vector<const char*> paths;
  for (const char* path : {"planes", "elements", "elements_im2col"})
    if (NightlyDepth() || std::find(ci.begin(), ci.end(), path) != ci.end()) paths.push_back(path);
  return paths;
}

inline std::string PathName(const ::testing::TestParamInfo<const char*>& info) {
  return info.param;
}

}  // namespace test
}  // namespace dlcaffe
