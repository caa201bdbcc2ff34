#include "dlcaffe/kernel_profile.hpp"

#include <algorithm>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

KernelProfile::~KernelProfile() {
  for (auto& e : events_) clReleaseEvent(e.first);
}

void KernelProfile::Record(cl_event event, const std::string& label) {
  events_.emplace_back(event, label);
}

std::vector<KernelTime> KernelProfile::Collect() {
  std::map<std::string, KernelTime> by_label;
  for (auto& e : events_) {
    DLC_CL_CHECK(clWaitForEvents(1, &e.first));
    cl_ulong start = 0, end = 0;
    DLC_CL_CHECK(clGetEventProfilingInfo(e.first, CL_PROFILING_COMMAND_START, sizeof(start),
                                         &start, nullptr));
    DLC_CL_CHECK(clGetEventProfilingInfo(e.first, CL_PROFILING_COMMAND_END, sizeof(end), &end,
                                         nullptr));
    KernelTime& t = by_label[e.second];
    t.label = e.second;
    ++t.calls;
    t.ms += end > start ? double(end - start) * 1e-6 : 0.0;
    clReleaseEvent(e.first);
  }
  events_.clear();
  std::vector<KernelTime> times;
  for (auto& entry : by_label) times.push_back(entry.second);
  SortByTime(&times);
  return times;
}

void SortByTime(std::vector<KernelTime>* times) {
  std::sort(times->begin(), times->end(),
            [](const KernelTime& a, const KernelTime& b) { return a.ms > b.ms; });
}

}  // namespace dlcaffe
