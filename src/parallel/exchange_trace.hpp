// A timeline of the gradient exchange, one line per event, for finding
// where a data-parallel step's time goes (dlcaffe train --exchange_trace).
// Times are milliseconds since the step began on this process's first
// replica (its StartGradientExchange, i.e. the start of the forward pass
// whose gradients are exchanged), taken on the host's steady clock:
//
//   replica STEP R  start T  enqueued E  backward_done B  exchange_done X
//     T: when the step began, in ms since the trace was opened;
//     E: the replica's thread had enqueued its whole backward pass;
//     B: its device had run it (the host saw the last marker complete);
//     X: its thread saw the mean gradients written back to its device.
//   bucket STEP K  floats F  posted P  copied C  summed S  reduced R  written W
//     P: the last local replica enqueued the bucket's copy to the host;
//     C: every local copy had arrived; S: the local sum was done;
//     R: the sum over the processes (MPI) was done; W: the writes of the
//     mean back to every device had finished. Each time is when the host
//     saw it, so an upper bound: for B and W the earlier of a driver's event
//     callback and this process's wait (NVIDIA's callbacks came 0.3 to 20 ms
//     after the wait returned, on an H100).
//
// `bench/exchange_trace.py FILE` sums a trace up per phase.
#pragma once
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace dlcaffe {

int64_t SteadyNowNs();

class ExchangeTrace {
 public:
  // An empty path traces nothing (every call returns at once).
  explicit ExchangeTrace(const std::string& path);
  ~ExchangeTrace();
  ExchangeTrace(const ExchangeTrace&) = delete;
  ExchangeTrace& operator=(const ExchangeTrace&) = delete;

  bool on() const { return file_ != nullptr; }
  void Replica(uint64_t step, int replica, int64_t start_ns, int64_t enqueued_ns,
               int64_t backward_done_ns, int64_t exchange_done_ns);
  void Bucket(uint64_t step, size_t bucket, size_t floats, int64_t start_ns, int64_t posted_ns,
              int64_t copied_ns, int64_t summed_ns, int64_t reduced_ns, int64_t written_ns);

 private:
  std::mutex mutex_;
  FILE* file_ = nullptr;
  int64_t opened_ns_ = 0;
};

}  // namespace dlcaffe
