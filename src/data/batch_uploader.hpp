// The layer's side of a BatchPrefetcher, for data layers that read on a
// prefetch thread: takes the next full batch, enqueues its upload to the
// device (asynchronous: the host batch stays untouched until the write's event
// completes) and hands finished batches back to the thread for refilling.
//
//   BatchUploader batches(ctx, depth, [this](PrefetchBatch* b) { ReadBatch(b); });
//   batches.Start();
//   ... in Forward:
//   const PrefetchBatch& batch = batches.UploadNext();
//   transformer.Transform(batch.images, batches.device_batch(), top[0]);
//
// A reading error (thrown by the fill function) is rethrown by UploadNext, and
// by every later call: the reader is broken until Restart.
#pragma once
#include <deque>
#include <exception>
#include <functional>
#include <memory>

#include "data/prefetch.hpp"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

class BatchUploader {
 public:
  BatchUploader(Context& ctx, int num_batches, BatchPrefetcher::Fill fill);
  // Stops the thread and waits for the uploads in flight.
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  void Start();

  // Takes the next full batch (waiting for the thread if none is ready) and
  // enqueues its upload into device_batch(). The batch stays valid until the
  // next call.
  const PrefetchBatch& UploadNext();
  // The device copy of the last batch UploadNext returned (the layout of
  // HostImageBatch: crops, labels at labels_offset(), pixels).
  cl_mem device_batch() const { return staging_->mem(); }

  // Stops the thread, drops the prefetched batches, calls `reposition` (the
  // thread is stopped: the reader's state may be changed there), forgets a
  // reading error and starts the thread again.
  void Restart(const std::function<void()>& reposition);

 private:
  struct Upload {
    std::unique_ptr<PrefetchBatch> batch;
    cl_event done;
  };
  std::unique_ptr<PrefetchBatch> NextReadyBatch();
  void RecycleFinishedUploads();
  void RecycleOldestUpload();
  // The host buffers must outlive their writes (destructor, restart).
  void WaitForAllUploads();

  Context* ctx_;
  BatchPrefetcher prefetcher_;
  std::deque<Upload> uploads_;
  BufferPtr staging_;
  std::exception_ptr failed_;
};

}  // namespace dlcaffe
