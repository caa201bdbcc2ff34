// Device time per kernel, from OpenCL profiling events: what `dlcaffe time
// --kernels` and `bench --kernels` print. Enabled on a Context
// (Context::EnableKernelProfile), every kernel, transfer and fill enqueued
// from then on is recorded with a label (a kernel's function name and the
// -D options of its program); Collect() waits for them and sums the device
// time per label.
#pragma once
#include <CL/cl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dlcaffe {

struct KernelTime {
  std::string label;  // "gemm_tiled [-DMR=8 ...]"
  int calls = 0;
  double ms = 0;  // device time, start to end, summed over the calls
};

// Most time first.
void SortByTime(std::vector<KernelTime>* times);

class KernelProfile {
 public:
  KernelProfile() = default;
  ~KernelProfile();
  KernelProfile(const KernelProfile&) = delete;
  KernelProfile& operator=(const KernelProfile&) = delete;

  // Takes ownership of `event` (a completed or pending kernel's).
  void Record(cl_event event, const std::string& label);
  // Sums the recorded events by label (waiting for each), most time first,
  // and forgets them.
  std::vector<KernelTime> Collect();

 private:
  std::vector<std::pair<cl_event, std::string>> events_;
};

}  // namespace dlcaffe
