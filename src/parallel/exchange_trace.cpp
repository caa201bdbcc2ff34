#include "exchange_trace.hpp"

#include <chrono>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

double Ms(int64_t ns, int64_t start_ns) { return (ns - start_ns) * 1e-6; }

}  // namespace

ExchangeTrace::ExchangeTrace(const std::string& path) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "w");
  opened_ns_ = SteadyNowNs();
  DLC_REQUIRE(file_, "cannot write the exchange trace '" << path << "'");
}

ExchangeTrace::~ExchangeTrace() {
  if (file_) std::fclose(file_);
}

void ExchangeTrace::Replica(uint64_t step, int replica, int64_t start_ns, int64_t enqueued_ns,
                            int64_t backward_done_ns, int64_t exchange_done_ns) {
  if (!file_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(file_,
               "replica %llu %d start %.3f enqueued %.3f backward_done %.3f exchange_done %.3f\n",
               static_cast<unsigned long long>(step), replica, Ms(start_ns, opened_ns_),
               Ms(enqueued_ns, start_ns),
               Ms(backward_done_ns, start_ns), Ms(exchange_done_ns, start_ns));
}

void ExchangeTrace::Bucket(uint64_t step, size_t bucket, size_t floats, int64_t start_ns,
                           int64_t posted_ns, int64_t copied_ns, int64_t summed_ns,
                           int64_t reduced_ns, int64_t written_ns) {
  if (!file_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(file_,
               "bucket %llu %zu floats %zu posted %.3f copied %.3f summed %.3f reduced %.3f "
               "written %.3f\n",
               static_cast<unsigned long long>(step), bucket, floats, Ms(posted_ns, start_ns),
               Ms(copied_ns, start_ns), Ms(summed_ns, start_ns), Ms(reduced_ns, start_ns),
               Ms(written_ns, start_ns));
}

}  // namespace dlcaffe
