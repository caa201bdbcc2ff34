// The build option that makes a kernel's float division (and sqrt)
// correctly rounded, where the device supports it. OpenCL allows 2.5 ulp by
// default and NVIDIA's driver uses it: overlaps of boxes (intersection over
// union) then differ from the IEEE quotient the host's reference (and Caffe
// SSD on the CPU) computes by an ulp, and an overlap at a threshold or two
// equal overlaps can decide a match or a suppression the other way.
#pragma once
#include <CL/cl.h>

#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

inline std::string ExactDivisionOption(const DeviceInfo& device) {
  cl_device_fp_config config = 0;
  if (clGetDeviceInfo(device.device_id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(config), &config,
                      nullptr) != CL_SUCCESS)
    return "";
  return (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ? "-cl-fp32-correctly-rounded-divide-sqrt"
                                                        : "";
}

}  // namespace dlcaffe
