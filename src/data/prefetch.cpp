#include "data/prefetch.hpp"

#include <glog/logging.h>

namespace dlcaffe {

BatchPrefetcher::BatchPrefetcher(int num_batches, Fill fill) : fill_(std::move(fill)) {
  CHECK_GT(num_batches, 0);
  for (int i = 0; i < num_batches; ++i) free_.push_back(std::make_unique<PrefetchBatch>());
}

BatchPrefetcher::~BatchPrefetcher() { Stop(); }

void BatchPrefetcher::Start() {
  CHECK(!thread_.joinable());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = false;
  }
  thread_ = std::thread(&BatchPrefetcher::Run, this);
}

void BatchPrefetcher::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BatchPrefetcher::Run() {
  for (;;) {
    std::unique_ptr<PrefetchBatch> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || !free_.empty(); });
      if (stop_) return;
      batch = std::move(free_.front());
      free_.pop_front();
    }
    batch->error = nullptr;
    try {
      fill_(batch.get());
    } catch (...) {
      batch->error = std::current_exception();
    }
    const bool failed = batch->error != nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      full_.push_back(std::move(batch));
    }
    changed_.notify_all();
    if (failed) return;
  }
}

std::unique_ptr<PrefetchBatch> BatchPrefetcher::TakeFull() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Waiting with no thread and nothing queued would never end.
  CHECK(thread_.joinable() || !full_.empty()) << "prefetch thread is not running";
  changed_.wait(lock, [this] { return !full_.empty(); });
  auto batch = std::move(full_.front());
  full_.pop_front();
  return batch;
}

std::unique_ptr<PrefetchBatch> BatchPrefetcher::TryTakeFull() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (full_.empty()) return nullptr;
  auto batch = std::move(full_.front());
  full_.pop_front();
  return batch;
}

void BatchPrefetcher::GiveBack(std::unique_ptr<PrefetchBatch> batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(batch));
  }
  changed_.notify_all();
}

void BatchPrefetcher::DiscardFull() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!full_.empty()) {
      free_.push_back(std::move(full_.front()));
      full_.pop_front();
    }
  }
  changed_.notify_all();
}

}  // namespace dlcaffe
