// Device memory is recycled, not allocated per iteration: a released buffer
// goes back to the pool and is handed out again for a request of the same
// (rounded) size.
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace dlcaffe {

class BufferPool;

// One device allocation. Returned to its pool when the last owner drops it.
class Buffer {
 public:
  Buffer(cl_mem mem, size_t bytes, std::shared_ptr<BufferPool> pool)
      : mem_(mem), bytes_(bytes), pool_(std::move(pool)), version_(NewVersion()) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  cl_mem mem() const { return mem_; }
  size_t bytes() const { return bytes_; }

  // What the contents are, as far as their writers said (MarkWritten): a
  // number no other buffer and no earlier contents of this one had, so a
  // copy derived from a buffer (weights rounded to 16 bits, filters
  // reordered: derived_copy.hpp) is current while it matches.
  uint64_t version() const { return version_; }
  // Called by whoever writes the contents (host writes, solvers' updates,
  // fillers); device work that writes through mem() must call it too.
  void MarkWritten() { version_ = NewVersion(); }

 private:
  static uint64_t NewVersion();
  cl_mem mem_;
  size_t bytes_;
  std::shared_ptr<BufferPool> pool_;
  uint64_t version_;
};
using BufferPtr = std::shared_ptr<Buffer>;

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(cl_context context);
  ~BufferPool();
  // A buffer of at least `bytes` bytes (contents undefined). Throws
  // dlcaffe::Error, before asking the driver, for a request over the device's
  // largest single allocation or one that would take the memory in use over
  // the device's global memory (drivers that allocate lazily, such as PoCL's
  // host memory, would otherwise fail later, or the kernel's OOM killer would
  // end the process); and for an allocation the driver refuses.
  BufferPtr Acquire(size_t bytes);
  // The device's CL_DEVICE_MAX_MEM_ALLOC_SIZE and CL_DEVICE_GLOBAL_MEM_SIZE
  // (0: no limit), which Acquire checks.
  void set_device_limits(uint64_t max_alloc_bytes, uint64_t global_mem_bytes) {
    max_alloc_bytes_ = max_alloc_bytes;
    global_mem_bytes_ = global_mem_bytes;
  }
  // Frees every idle buffer.
  void Trim();
  size_t bytes_in_use() const { return bytes_in_use_; }
  size_t bytes_idle() const { return bytes_idle_; }

 private:
  friend class Buffer;
  void Release(cl_mem mem, size_t bytes);
  cl_context context_;
  std::mutex mutex_;
  std::multimap<size_t, cl_mem> idle_;
  size_t bytes_in_use_ = 0;
  size_t bytes_idle_ = 0;
  uint64_t max_alloc_bytes_ = 0;
  uint64_t global_mem_bytes_ = 0;
};

}  // namespace dlcaffe
