// Device memory is recycled, not allocated per iteration: a released buffer
// goes back to the pool and is handed out again for a request of the same
// (rounded) size.
#pragma once
#include <CL/cl.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace dlcaffe {

class BufferPool;

// One device allocation. Returned to its pool when the last owner drops it.
class Buffer {
 public:
  Buffer(cl_mem mem, size_t bytes, std::shared_ptr<BufferPool> pool)
      : mem_(mem), bytes_(bytes), pool_(std::move(pool)) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  cl_mem mem() const { return mem_; }
  size_t bytes() const { return bytes_; }

 private:
  cl_mem mem_;
  size_t bytes_;
  std::shared_ptr<BufferPool> pool_;
};
using BufferPtr = std::shared_ptr<Buffer>;

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(cl_context context);
  ~BufferPool();
  // A buffer of at least `bytes` bytes (contents undefined).
  BufferPtr Acquire(size_t bytes);
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
};

}  // namespace dlcaffe
