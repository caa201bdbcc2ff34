// The replicas of one data-parallel training run that live in this process
// (one thread and one device context each), joined to those of the other
// processes through a ProcessGroup. Each local replica talks to the group
// through its ReplicaLink.
//
// Gradients: as a replica's backward pass finishes a bucket
// (gradient_buckets.hpp), the bucket is copied to the host on a transfer
// queue (gradient_staging.hpp). A thread of the group's own then, bucket by
// bucket and in a fixed order (so every run sums alike): waits for every
// local replica's copy, sums them, sums that over the processes (MPI),
// divides by the number of replicas, and writes the mean back to every
// local replica's device. Backward goes on meanwhile. The replicas' threads
// do not wait for the exchange: their queues do (a barrier on a user event
// the exchange completes), so each update is already enqueued when the
// mean arrives. Only what is left after the last backward layer delays a
// device (TakeExchangeReport measures that: from the end of the slowest
// local replica's backward pass to the end of the writes).
//
// Failure: the first replica (or the exchange thread) to fail stops the
// group; every other local replica's next call throws instead of waiting.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlcaffe/net.hpp"
#include "dlcaffe/process_group.hpp"
#include "dlcaffe/replica_link.hpp"
#include "exchange_trace.hpp"
#include "gradient_buckets.hpp"
#include "gradient_staging.hpp"

namespace dlcaffe {

struct ExchangeOptions {
  size_t bucket_bytes = size_t(25) << 20;
  bool bucket_taper = true;  // PlanGradientBuckets
  int sum_threads = 0;     // host threads summing a bucket; 0: DefaultSumThreads()
  std::string trace_path;  // "": no trace (exchange_trace.hpp)
  // What travels, for finding where a step's time goes: everything; only
  // the copies to the host and back (no sums: replicas train apart); or
  // nothing at all. Only kAll trains correctly.
  enum class Mode { kAll, kCopiesOnly, kNothing } mode = Mode::kAll;
};

class ReplicaGroup {
 public:
  ReplicaGroup(ProcessGroup& processes, int local_count, const ExchangeOptions& options);
  ~ReplicaGroup();  // stops the exchange thread
  // Ends the gradient exchange and lets go of the devices: joins the
  // exchange thread, releases the posted events and frees the staging (each
  // waits for its queued transfers). Call it before the nets and contexts
  // given to Attach go away (a replica that failed leaves transfers in
  // flight); the destructor calls it too.
  void Stop();

  int local_count() const { return local_count_; }
  int count() const { return local_count_ * processes_.size(); }
  int global_index(int local) const { return processes_.rank() * local_count_ + local; }
  // "replica 3 (rank 1, ocl:0:1)": names a replica in messages.
  std::string Describe(int local) const;

  // Registers local replica `local`'s train net and context (every replica's
  // net is alike); once all have, plans the buckets and starts the exchange
  // thread.
  void Attach(int local, Net& net, Context& ctx);
  ReplicaLink& link(int local);

  // Stops the group: `error` becomes what the run reports, unless another
  // failure came first. `who` names the failed replica.
  void Fail(const std::string& who, std::exception_ptr error);
  bool failed() const;
  // The first failure's message, prefixed with who failed ("" if none).
  std::string FailureMessage() const;

 private:
  class Link;
  friend class Link;

  // Runs `leader_work` on local replica 0 once every local replica has
  // arrived; all return after it. Throws if the group has failed.
  template <typename Work>
  void Rendezvous(int local, Work&& leader_work);
  void ThrowIfFailed(int local) const;  // requires mutex_

  // `enqueued_ns`: for the last bucket, when the replica had enqueued its
  // whole backward pass.
  void Post(int local, size_t bucket, cl_event computed, cl_event done, int64_t enqueued_ns);
  // A user event that the exchange completes when local replica `local`'s
  // step now beginning has its mean on the device (nullptr when nothing is
  // exchanged). The caller gets a reference of its own.
  cl_event OpenStep(int local);
  // Completes every open step's event (requires mutex_).
  void ReleaseStepWaits();
  void WaitForExchange(int local, uint64_t exchange);
  void ExchangeLoop();
  void ExchangeOnce();
  std::string TakeReport();

  ProcessGroup& processes_;
  const int local_count_;
  const ExchangeOptions options_;
  ExchangeTrace trace_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<Net*> nets_;
  std::vector<Context*> contexts_;
  std::vector<std::unique_ptr<GradientStaging>> staging_;
  std::vector<GradientBucket> buckets_;
  int attached_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool failed_ = false;
  std::exception_ptr failure_;
  std::string failure_who_;
  bool stopping_ = false;
  // Rendezvous.
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::string> text_slots_;
  std::vector<int> int_slots_;
  std::string text_result_;
  std::vector<std::string> gathered_;
  int int_result_ = 0;
  // Gradient exchange: posted_[local][bucket] = {compute point, copy done}.
  std::vector<std::vector<std::pair<cl_event, cl_event>>> posted_;
  // When each bucket's copy was posted (the latest local replica's), when
  // each replica had enqueued its backward pass, and when its device ended
  // it (a driver callback's time; 0 = not yet).
  std::vector<int64_t> posted_ns_;
  std::vector<int64_t> enqueued_ns_;
  std::vector<std::atomic<int64_t>> backward_done_ns_;
  // Per local replica, the user events of its steps not yet exchanged.
  std::vector<std::deque<cl_event>> step_waits_;
  // For the trace: when each write back (bucket-major) completed.
  std::vector<std::atomic<int64_t>> written_ns_;
  uint64_t exchanges_done_ = 0;
  std::thread exchanger_;
  // When the root replica's step began (SteadyNowNs), for the trace.
  std::atomic<int64_t> step_start_ns_{0};
  // For TakeExchangeReport (the first local replica's steps): seconds not
  // hidden, and steps, since the last report.
  double exposed_s_ = 0, step_s_ = 0;
  int reported_steps_ = 0;
  int64_t last_exchange_end_ns_ = 0;
};

}  // namespace dlcaffe
