// One replica's gradients in host memory: a page-locked buffer (OpenCL
// CL_MEM_ALLOC_HOST_PTR, mapped once) of all its learnable parameters'
// gradients, laid out as PlanGradientBuckets says, and two command queues of
// its own for the copies, so that they run beside the backward pass's
// kernels instead of between them: one to the host, one back. (On one
// in-order queue, every copy back waited behind the copies to the host
// already enqueued for later buckets, each waiting for its point in
// backward: no mean reached the device before backward had ended.)
#pragma once
#include <CL/cl.h>

#include <cstddef>

#include "dlcaffe/net.hpp"
#include "gradient_buckets.hpp"

namespace dlcaffe {

class GradientStaging {
 public:
  GradientStaging(Context& ctx, size_t floats);
  ~GradientStaging();
  GradientStaging(const GradientStaging&) = delete;
  GradientStaging& operator=(const GradientStaging&) = delete;

  float* host() { return host_; }
  // Copies the bucket's gradients (Blob diffs) to host(), once everything
  // enqueued on the context's queue so far has run; does not wait. `done`
  // gets the event of the copies, `computed` the event of the point on the
  // compute queue they waited for (the caller releases both).
  void ReadAfterCompute(const Net& net, const GradientBucket& bucket, cl_event* computed,
                        cl_event* done);
  // Copies the bucket's floats from `source` (host memory with the same
  // layout as host()) to the gradients; does not wait. Returns the event
  // (the caller releases it).
  cl_event Write(const Net& net, const GradientBucket& bucket, const float* source);

 private:
  Context* ctx_;
  cl_command_queue to_host_ = nullptr;
  cl_command_queue to_device_ = nullptr;
  cl_mem pinned_ = nullptr;
  float* host_ = nullptr;
};

}  // namespace dlcaffe
