// The convolution paths the Convolution and Deconvolution tests run every
// case through, whatever this device would pick: the layout kernels' two
// shapes (a plane or an element per work-item), and for the element shape
// the GEMM's image columns read implicitly (no im2col buffer) or through
// im2col ("planes" always uses im2col).
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dlcaffe {
namespace test {

class ConvolutionPathTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string path = GetParam();
    const bool im2col = path == "elements_im2col";
    setenv("DLCAFFE_CONV_KERNELS", im2col ? "elements" : path.c_str(), 1);
    setenv("DLCAFFE_CONV_IMPLICIT", path == "elements" ? "on" : "off", 1);
  }
  void TearDown() override {
    unsetenv("DLCAFFE_CONV_KERNELS");
    unsetenv("DLCAFFE_CONV_IMPLICIT");
  }
};

#define DLC_INSTANTIATE_CONVOLUTION_PATHS(suite)                                   \
  INSTANTIATE_TEST_SUITE_P(KernelShapes, suite,                                     \
                           ::testing::Values("planes", "elements", "elements_im2col"), \
                           [](const ::testing::TestParamInfo<const char*>& info) {   \
                             return std::string(info.param);                         \
                           })

}  // namespace test
}  // namespace dlcaffe
