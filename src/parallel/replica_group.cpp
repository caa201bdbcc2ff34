#include "replica_group.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "host_sum.hpp"

namespace dlcaffe {

namespace {

// A write's completion time, for the trace (set from the driver's thread).
void CL_CALLBACK RecordCompletion(cl_event, cl_int, void* slot) {
  static_cast<std::atomic<int64_t>*>(slot)->store(SteadyNowNs());
}

// Strings packed into one: each as its decimal length, a space, its bytes.
std::string Pack(const std::vector<std::string>& parts) {
  std::string packed;
  for (const std::string& part : parts) packed += std::to_string(part.size()) + " " + part;
  return packed;
}

std::vector<std::string> Unpack(const std::string& packed) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at < packed.size()) {
    const size_t space = packed.find(' ', at);
    DLC_REQUIRE(space != std::string::npos, "replica data arrived cut short");
    const size_t length = std::stoull(packed.substr(at, space - at));
    DLC_REQUIRE(space + 1 + length <= packed.size(), "replica data arrived cut short");
    parts.push_back(packed.substr(space + 1, length));
    at = space + 1 + length;
  }
  return parts;
}

}  // namespace

class ReplicaGroup::Link : public ReplicaLink {
 public:
  Link(ReplicaGroup& group, int local) : group_(group), local_(local) {}

  int index() const override { return group_.global_index(local_); }
  int count() const override { return group_.count(); }

  ~Link() override {
    if (step_wait_) clReleaseEvent(step_wait_);
  }

  void StartGradientExchange() override {
    armed_ = true;
    next_bucket_ = 0;
    if (local_ == 0) group_.step_start_ns_.store(SteadyNowNs());
    if (step_wait_) clReleaseEvent(step_wait_);
    step_wait_ = group_.OpenStep(local_);
    if (step_wait_) ++exchanges_started_;
  }

  void OnLayerBackward(int layer_id) override {
    if (!armed_ || group_.options_.mode == ExchangeOptions::Mode::kNothing) return;
    const auto& buckets = group_.buckets_;
    while (next_bucket_ < buckets.size() &&
           buckets[next_bucket_].final_after_layer >= layer_id) {
      // The whole backward pass is enqueued when the last bucket is.
      const int64_t enqueued = SteadyNowNs();
      cl_event computed = nullptr, done = nullptr;
      group_.staging_[local_]->ReadAfterCompute(*group_.nets_[local_], buckets[next_bucket_],
                                                &computed, &done);
      group_.Post(local_, next_bucket_, computed, done, enqueued);
      ++next_bucket_;
    }
  }

  // In one process the host does not wait: the device does. Whatever this
  // replica enqueues from here on (the update, the next forward) runs once
  // the mean is on its device, so the update's kernels are queued, not
  // launched, when the exchange ends.
  void FinishGradientExchange() override {
    if (!armed_) StartGradientExchange();
    OnLayerBackward(-1);  // whatever no layer's turn has sent yet
    armed_ = false;
    if (!step_wait_) return;
    cl_command_queue queue = group_.contexts_[local_]->queue();
    DLC_CL_CHECK(clEnqueueBarrierWithWaitList(queue, 1, &step_wait_, nullptr));
    DLC_CL_CHECK(clFlush(queue));
    clReleaseEvent(step_wait_);
    step_wait_ = nullptr;
    // Across processes the thread still waits: its next MPI call (the
    // agreement on stopping) would run beside the gradients' collectives,
    // which OpenMPI 4.1 then slowed (2 H100s, resnet50: 1.69x instead of
    // 1.84-1.89x).
    if (group_.processes_.size() > 1) Settle();
  }

  void Settle() override { group_.WaitForExchange(local_, exchanges_started_); }

  std::string TakeExchangeReport() override { return group_.TakeReport(); }

  int Decide(int wanted) override {
    group_.int_slots_[local_] = wanted;
    group_.Rendezvous(local_, [this] {
      int all = 0;
      for (int value : group_.int_slots_) all |= value;
      group_.int_result_ = group_.processes_.AllReduceOr(all);
    });
    return group_.int_result_;
  }

  std::string BroadcastFromRoot(const std::string& value) override {
    if (index() == 0) group_.text_slots_[0] = value;
    group_.Rendezvous(local_, [this] {
      group_.text_result_ = group_.processes_.Broadcast(
          group_.processes_.rank() == 0 ? group_.text_slots_[0] : std::string());
    });
    return group_.text_result_;
  }

  std::vector<std::string> GatherAtRoot(const std::string& value) override {
    group_.text_slots_[local_] = value;
    group_.Rendezvous(local_, [this] {
      group_.gathered_.clear();
      for (const std::string& packed : group_.processes_.Gather(Pack(group_.text_slots_)))
        for (std::string& part : Unpack(packed)) group_.gathered_.push_back(std::move(part));
    });
    return index() == 0 ? group_.gathered_ : std::vector<std::string>();
  }

 private:
  ReplicaGroup& group_;
  const int local_;
  bool armed_ = false;
  size_t next_bucket_ = 0;
  // The user event the exchange completes once this step's mean is on the
  // device (this thread's reference; the group holds another).
  cl_event step_wait_ = nullptr;
  uint64_t exchanges_started_ = 0;
};

ReplicaGroup::ReplicaGroup(ProcessGroup& processes, int local_count,
                           const ExchangeOptions& options)
    : processes_(processes),
      local_count_(local_count),
      options_(options),
      trace_(options.trace_path.empty() || processes.size() == 1
                 ? options.trace_path
                 : options.trace_path + ".rank" + std::to_string(processes.rank())),
      nets_(local_count, nullptr),
      contexts_(local_count, nullptr),
      text_slots_(local_count),
      int_slots_(local_count, 0) {
  DLC_REQUIRE(local_count >= 1, "data-parallel training needs at least one device");
  for (int i = 0; i < local_count; ++i) links_.emplace_back(new Link(*this, i));
  staging_.resize(local_count);
}

ReplicaGroup::~ReplicaGroup() { Stop(); }

void ReplicaGroup::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (exchanger_.joinable()) exchanger_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ReleaseStepWaits();
  }
  for (auto& buckets : posted_)
    for (auto& events : buckets) {
      if (events.first) clReleaseEvent(events.first);
      if (events.second) clReleaseEvent(events.second);
      events = {nullptr, nullptr};
    }
  staging_.clear();
}

ReplicaLink& ReplicaGroup::link(int local) { return *links_[local]; }

std::string ReplicaGroup::Describe(int local) const {
  std::ostringstream text;
  text << "replica " << global_index(local) << " of " << count();
  if (processes_.size() > 1) text << " (rank " << processes_.rank() << ")";
  if (contexts_[local]) text << " on " << contexts_[local]->info().Describe();
  return text.str();
}

void ReplicaGroup::Attach(int local, Net& net, Context& ctx) {
  nets_[local] = &net;
  contexts_[local] = &ctx;
  if (++attached_ < local_count_) return;
  buckets_ = PlanGradientBuckets(*nets_[0], options_.bucket_bytes, options_.bucket_taper);
  posted_ns_.assign(buckets_.size(), 0);
  enqueued_ns_.assign(local_count_, 0);
  backward_done_ns_ = std::vector<std::atomic<int64_t>>(local_count_);
  step_waits_.resize(local_count_);
  written_ns_ = std::vector<std::atomic<int64_t>>(buckets_.size() * local_count_);
  size_t floats = 0;
  for (const GradientBucket& bucket : buckets_) floats += bucket.count;
  for (int i = 0; i < local_count_; ++i)
    staging_[i] = std::make_unique<GradientStaging>(*contexts_[i], floats);
  if (processes_.size() > 1) processes_.PrepareGradientSums(floats, buckets_.size(),
                                    contexts_[0]->options().shared_memory_sum);
  posted_.assign(local_count_, std::vector<std::pair<cl_event, cl_event>>(
                                   buckets_.size(), {nullptr, nullptr}));
  // A net without learnable parameters has nothing to exchange.
  if (!buckets_.empty() && options_.mode != ExchangeOptions::Mode::kNothing) exchanger_ = std::thread([this] { ExchangeLoop(); });
}

void ReplicaGroup::Fail(const std::string& who, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      failed_ = true;
      failure_ = error;
      failure_who_ = who;
    }
    // Queues waiting for an exchange that will not come would never drain:
    // they go on with the gradients they have, which no one will use (every
    // replica's next agreement, or Settle, throws). (An error status would
    // say it better, but PoCL 3.1 aborts on one.)
    ReleaseStepWaits();
  }
  changed_.notify_all();
}

cl_event ReplicaGroup::OpenStep(int local) {
  if (buckets_.empty() || options_.mode == ExchangeOptions::Mode::kNothing) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  ThrowIfFailed(local);
  cl_int err = CL_SUCCESS;
  cl_event wait = clCreateUserEvent(contexts_[local]->cl(), &err);
  DLC_CL_CHECK(err);
  DLC_CL_CHECK(clRetainEvent(wait));
  step_waits_[local].push_back(wait);
  return wait;
}

void ReplicaGroup::ReleaseStepWaits() {
  for (auto& waits : step_waits_) {
    for (cl_event wait : waits) {
      clSetUserEventStatus(wait, CL_COMPLETE);
      clReleaseEvent(wait);
    }
    waits.clear();
  }
}

bool ReplicaGroup::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

std::string ReplicaGroup::FailureMessage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failed_) return "";
  std::string what = "unknown error";
  try {
    std::rethrow_exception(failure_);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  return failure_who_ + ": " + what;
}

void ReplicaGroup::ThrowIfFailed(int local) const {
  if (failed_)
    DLC_FAIL(Describe(local) << " stopped because " << failure_who_ << " failed");
}

template <typename Work>
void ReplicaGroup::Rendezvous(int local, Work&& leader_work) {
  std::unique_lock<std::mutex> lock(mutex_);
  ThrowIfFailed(local);
  const uint64_t generation = generation_;
  if (++arrived_ == local_count_) changed_.notify_all();
  if (local != 0) {
    changed_.wait(lock, [&] { return generation_ != generation || failed_; });
    ThrowIfFailed(local);
    return;
  }
  changed_.wait(lock, [&] { return arrived_ == local_count_ || failed_; });
  ThrowIfFailed(local);
  lock.unlock();
  leader_work();  // a throw fails this replica, and so the group
  lock.lock();
  arrived_ = 0;
  ++generation_;
  changed_.notify_all();
}

void ReplicaGroup::Post(int local, size_t bucket, cl_event computed, cl_event done,
                        int64_t enqueued_ns) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_[local][bucket] = {computed, done};
    const int64_t now = SteadyNowNs();
    posted_ns_[bucket] = std::max(posted_ns_[bucket], now);
    if (bucket + 1 == buckets_.size()) {
      // The backward pass is enqueued; its end on the device is this event.
      enqueued_ns_[local] = enqueued_ns;
      backward_done_ns_[local].store(0);
      DLC_CL_CHECK(clSetEventCallback(computed, CL_COMPLETE, RecordCompletion,
                                      &backward_done_ns_[local]));
    }
  }
  changed_.notify_all();
}

void ReplicaGroup::WaitForExchange(int local, uint64_t exchange) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return exchanges_done_ >= exchange || failed_; });
  ThrowIfFailed(local);
}

void ReplicaGroup::ExchangeLoop() {
  try {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (stopping_ || failed_) return;
      }
      ExchangeOnce();
    }
  } catch (...) {
    Fail("the gradient exchange" +
             (processes_.size() > 1 ? " of rank " + std::to_string(processes_.rank())
                                    : std::string()),
         std::current_exception());
  }
}

namespace {

// Waits for an OpenCL event of replica `who`; a failed command (a lost or
// faulty device) throws naming the replica.
void WaitForCopy(cl_event event, const std::string& who, const char* what) {
  const cl_int err = clWaitForEvents(1, &event);
  cl_int status = CL_COMPLETE;
  clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr);
  clReleaseEvent(event);
  DLC_REQUIRE(err == CL_SUCCESS && status == CL_COMPLETE,
              who << ": the device failed while " << what << " ("
                  << ClErrorName(err != CL_SUCCESS ? err : status) << ")");
}

}  // namespace

void ReplicaGroup::ExchangeOnce() {
  const float mean_scale = 1.f / count();
  const int threads = options_.sum_threads > 0 ? options_.sum_threads : DefaultSumThreads();
  const bool sums = options_.mode == ExchangeOptions::Mode::kAll;
  struct Times {
    int64_t posted, copied, summed, reduced;
  };
  std::vector<Times> times(buckets_.size());
  std::vector<int64_t> backward_done(local_count_, 0);
  std::vector<cl_event> writes;
  int64_t start = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::vector<std::pair<cl_event, cl_event>> events(local_count_);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        if (stopping_ || failed_) return true;
        for (int j = 0; j < local_count_; ++j)
          if (!posted_[j][b].second) return false;
        return true;
      });
      if (stopping_ || failed_) {
        for (cl_event write : writes) clReleaseEvent(write);
        return;
      }
      for (int j = 0; j < local_count_; ++j) {
        events[j] = posted_[j][b];
        posted_[j][b] = {nullptr, nullptr};
      }
      times[b].posted = posted_ns_[b];
      posted_ns_[b] = 0;
    }
    // The root replica has begun this step by now (it posted).
    if (b == 0) start = step_start_ns_.load();
    for (int j = 0; j < local_count_; ++j) {
      if (b + 1 == buckets_.size()) {
        // The end of replica j's backward pass: when this thread, idle until
        // then, sees it, or when the driver's callback did, whichever is
        // earlier (this thread may arrive late; the callback may run late).
        clWaitForEvents(1, &events[j].first);
        const int64_t seen = SteadyNowNs(), called = backward_done_ns_[j].load();
        backward_done[j] = called > 0 ? std::min(seen, called) : seen;
      }
      clReleaseEvent(events[j].first);
      WaitForCopy(events[j].second, Describe(j), "copying gradients to the host");
    }
    times[b].copied = SteadyNowNs();
    const GradientBucket& bucket = buckets_[b];
    float* sum = staging_[0]->host() + bucket.start;
    if (sums) {
      // Local replicas in index order, then the processes: the same sums in
      // the same order at every iteration.
      std::vector<const float*> others;
      for (int j = 1; j < local_count_; ++j) others.push_back(staging_[j]->host() + bucket.start);
      const bool across = processes_.size() > 1;
      SumInto(sum, others, bucket.count, across ? 1.f : mean_scale, threads);
      times[b].summed = SteadyNowNs();
      if (across) processes_.AllReduceSum(sum, bucket.count, bucket.start, mean_scale, threads);
    } else {
      times[b].summed = times[b].copied;
    }
    times[b].reduced = SteadyNowNs();
    // Without sums (a diagnosis), every replica gets its own gradients back.
    for (int j = 0; j < local_count_; ++j) {
      writes.push_back(
          staging_[j]->Write(*nets_[j], bucket, staging_[sums ? 0 : j]->host()));
      if (trace_.on()) {
        written_ns_[writes.size() - 1].store(0);
        DLC_CL_CHECK(clSetEventCallback(writes.back(), CL_COMPLETE, RecordCompletion,
                                        &written_ns_[writes.size() - 1]));
      }
    }
  }
  // When this thread saw each bucket's writes done: with the driver's
  // callbacks (which NVIDIA's runs up to 20 ms late), an upper bound.
  std::vector<int64_t> written_seen(buckets_.size());
  for (size_t w = 0; w < writes.size(); ++w) {
    WaitForCopy(writes[w], Describe(static_cast<int>(w % local_count_)),
                "copying the mean gradients to the device");
    written_seen[w / local_count_] = SteadyNowNs();
  }
  const int64_t end = SteadyNowNs();
  const uint64_t step = exchanges_done_ + 1;  // only this thread changes it
  std::vector<int64_t> enqueued(local_count_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // (Once their queues go on, the replicas may post their next step.)
    enqueued = enqueued_ns_;
    // Every local replica's queue goes on.
    for (auto& waits : step_waits_) {
      DLC_REQUIRE(!waits.empty(), "a replica's step ended without its wait");
      clSetUserEventStatus(waits.front(), CL_COMPLETE);
      clReleaseEvent(waits.front());
      waits.pop_front();
    }
    const int64_t backward_end = *std::max_element(backward_done.begin(), backward_done.end());
    if (last_exchange_end_ns_ > 0) {
      exposed_s_ += std::max<int64_t>(0, end - backward_end) * 1e-9;
      step_s_ += (end - last_exchange_end_ns_) * 1e-9;
      ++reported_steps_;
    }
    last_exchange_end_ns_ = end;
    ++exchanges_done_;
  }
  changed_.notify_all();
  if (!trace_.on()) return;
  for (int j = 0; j < local_count_; ++j)
    trace_.Replica(step, global_index(j), start, enqueued[j], backward_done[j], end);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    int64_t written = 0;
    for (int j = 0; j < local_count_; ++j) {
      // The callback may run a moment after the wait returned.
      std::atomic<int64_t>& at = written_ns_[b * local_count_ + j];
      for (int spins = 0; at.load() == 0 && spins < 100000; ++spins) std::this_thread::yield();
      written = std::max(written, at.load());
    }
    written = written > 0 ? std::min(written, written_seen[b]) : written_seen[b];
    trace_.Bucket(step, b, buckets_[b].count, start, times[b].posted, times[b].copied,
                  times[b].summed, times[b].reduced, written);
  }
}

std::string ReplicaGroup::TakeReport() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t floats = 0;
  for (const GradientBucket& bucket : buckets_) floats += bucket.count;
  char text[320];
  const int steps = std::max(1, reported_steps_);
  std::snprintf(text, sizeof(text),
                "    Gradient exchange: %.2f ms per step not hidden behind backward (%.1f%% of "
                "%.2f ms per step); %zu bucket(s), %.2f MB of gradients, %d replica(s)",
                exposed_s_ * 1e3 / steps,
                step_s_ > 0 ? 100.0 * exposed_s_ / step_s_ : 0.0, step_s_ * 1e3 / steps,
                buckets_.size(), floats * 4.0 / (1 << 20), count());
  exposed_s_ = step_s_ = 0;
  reported_steps_ = 0;
  return text;
}

}  // namespace dlcaffe
