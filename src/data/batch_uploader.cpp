#include "data/batch_uploader.hpp"

namespace dlcaffe {

BatchUploader::BatchUploader(Context& ctx, int num_batches, BatchPrefetcher::Fill fill)
    : ctx_(&ctx), prefetcher_(num_batches, std::move(fill)) {}

BatchUploader::~BatchUploader() {
  prefetcher_.Stop();
  WaitForAllUploads();
}

void BatchUploader::Start() { prefetcher_.Start(); }

const PrefetchBatch& BatchUploader::UploadNext() {
  if (failed_) std::rethrow_exception(failed_);
  std::unique_ptr<PrefetchBatch> batch = NextReadyBatch();
  if (batch->error) {
    failed_ = batch->error;
    prefetcher_.GiveBack(std::move(batch));
    std::rethrow_exception(failed_);
  }
  const HostImageBatch& images = batch->images;
  // The in-order queue runs this write after the kernels that read the
  // previous batch from the same buffer.
  if (!staging_ || staging_->bytes() < images.bytes()) staging_ = ctx_->Allocate(images.bytes());
  cl_event uploaded = nullptr;
  DLC_CL_CHECK(clEnqueueWriteBuffer(ctx_->queue(), staging_->mem(), CL_FALSE, 0, images.bytes(),
                                    images.data(), 0, nullptr, &uploaded));
  uploads_.push_back(Upload{std::move(batch), uploaded});
  return *uploads_.back().batch;
}

void BatchUploader::Restart(const std::function<void()>& reposition) {
  prefetcher_.Stop();
  WaitForAllUploads();
  prefetcher_.DiscardFull();
  reposition();
  failed_ = nullptr;
  prefetcher_.Start();
}

// Batches whose upload finished go back to the thread first; if none is ready
// while uploads are pending, the oldest upload is awaited so that the thread
// has a buffer to fill.
std::unique_ptr<PrefetchBatch> BatchUploader::NextReadyBatch() {
  for (;;) {
    RecycleFinishedUploads();
    if (auto batch = prefetcher_.TryTakeFull()) return batch;
    if (uploads_.empty()) return prefetcher_.TakeFull();
    DLC_CL_CHECK(clWaitForEvents(1, &uploads_.front().done));
    RecycleOldestUpload();
  }
}

void BatchUploader::RecycleFinishedUploads() {
  while (!uploads_.empty()) {
    cl_int status = CL_QUEUED;
    DLC_CL_CHECK(clGetEventInfo(uploads_.front().done, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                sizeof(status), &status, nullptr));
    if (status != CL_COMPLETE) break;
    RecycleOldestUpload();
  }
}

void BatchUploader::RecycleOldestUpload() {
  clReleaseEvent(uploads_.front().done);
  prefetcher_.GiveBack(std::move(uploads_.front().batch));
  uploads_.pop_front();
}

void BatchUploader::WaitForAllUploads() {
  while (!uploads_.empty()) {
    clWaitForEvents(1, &uploads_.front().done);
    RecycleOldestUpload();
  }
}

}  // namespace dlcaffe
