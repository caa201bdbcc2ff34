#include "dlcaffe/buffer_pool.hpp"

#include <glog/logging.h>

#include <atomic>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

Buffer::~Buffer() { pool_->Release(mem_, bytes_); }

uint64_t Buffer::NewVersion() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

BufferPool::BufferPool(cl_context context) : context_(context) {
  clRetainContext(context_);
}

BufferPool::~BufferPool() {
  Trim();
  clReleaseContext(context_);
}

// Sizes are rounded so that buffers of nearly equal size are interchangeable.
static double Mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

static size_t PoolSize(size_t bytes) {
  if (bytes < 256) return 256;
  size_t step = 256;
  while (step * 16 < bytes) step *= 2;
  return RoundUp(bytes, step);
}

BufferPtr BufferPool::Acquire(size_t bytes) {
  const size_t size = PoolSize(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest idle buffer that fits, up to twice the size asked: a
    // pass's transient buffers (columns, partial sums) come in many sizes,
    // and an exact match alone left a quarter of resnet50's training
    // memory idle (docs/benchmarks.md).
    auto it = idle_.lower_bound(size);
    if (it != idle_.end() && it->first <= 2 * size) {
      const size_t size = it->first;
      cl_mem mem = it->second;
      idle_.erase(it);
      bytes_idle_ -= size;
      bytes_in_use_ += size;
      return std::make_shared<Buffer>(mem, size, shared_from_this());
    }
  }
  if (max_alloc_bytes_ && size > max_alloc_bytes_)
    DLC_FAIL("cannot allocate " << bytes << " bytes (" << Mib(bytes)
                                << " MiB) of device memory: the device allocates at most "
                                << max_alloc_bytes_ << " bytes (" << Mib(max_alloc_bytes_)
                                << " MiB) at once (CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
  if (global_mem_bytes_ && bytes_in_use_ + bytes_idle_ + size > global_mem_bytes_) {
    Trim();
    if (bytes_in_use_ + size > global_mem_bytes_)
      DLC_FAIL("cannot allocate " << bytes << " bytes (" << Mib(bytes)
                                  << " MiB) of device memory: " << bytes_in_use_
                                  << " bytes are in use and the device has "
                                  << global_mem_bytes_ << " bytes (" << Mib(global_mem_bytes_)
                                  << " MiB, CL_DEVICE_GLOBAL_MEM_SIZE)");
  }
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &err);
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
      err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE) {
    Trim();  // give idle memory back and try once more
    mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, size, nullptr, &err);
  }
  DLC_REQUIRE(err == CL_SUCCESS, "cannot allocate " << bytes << " bytes (" << Mib(bytes)
                                     << " MiB) of device memory (" << ClErrorName(err)
                                     << "; " << bytes_in_use_ << " bytes in use)");
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_in_use_ += size;
  return std::make_shared<Buffer>(mem, size, shared_from_this());
}

void BufferPool::Release(cl_mem mem, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.emplace(bytes, mem);
  bytes_in_use_ -= bytes;
  bytes_idle_ += bytes;
}

void BufferPool::Trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : idle_) clReleaseMemObject(entry.second);
  idle_.clear();
  bytes_idle_ = 0;
}

}  // namespace dlcaffe
