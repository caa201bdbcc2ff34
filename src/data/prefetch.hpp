// A thread that prepares batches ahead of use, as Caffe's
// BasePrefetchingDataLayer does: a fixed set of batches circulates between a
// free queue (the thread fills them) and a full queue (the layer takes them).
// The thread runs only host code (reading and decoding); it never touches
// OpenCL.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/data/image_batch.hpp"

namespace dlcaffe {

struct PrefetchBatch {
  HostImageBatch images;
  std::vector<float> box_rows;  // AnnotatedData: the batch's boxes, 8 values each
  DataReaderState state_after;  // the reader's state once this batch was read
  std::exception_ptr error;     // set instead of images when reading failed
};

class BatchPrefetcher {
 public:
  // `fill` runs on the thread; an exception it throws is stored in the batch
  // (and ends the thread: the reader is broken from there on).
  using Fill = std::function<void(PrefetchBatch*)>;
  BatchPrefetcher(int num_batches, Fill fill);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  void Start();
  // Asks the thread to stop after its current batch and joins it. Full
  // batches stay queued.
  void Stop();
  bool running() const { return thread_.joinable(); }

  // The next full batch; waits for it.
  std::unique_ptr<PrefetchBatch> TakeFull();
  // The next full batch if one is ready, else null.
  std::unique_ptr<PrefetchBatch> TryTakeFull();
  // Returns a batch for refilling.
  void GiveBack(std::unique_ptr<PrefetchBatch> batch);
  // Moves every full batch back to the free queue (to read anew after a seek).
  void DiscardFull();

 private:
  void Run();

  Fill fill_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<PrefetchBatch>> free_, full_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dlcaffe
