#include "gradient_staging.hpp"

#include <vector>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

GradientStaging::GradientStaging(Context& ctx, size_t floats) : ctx_(&ctx) {
  cl_int err = CL_SUCCESS;
  to_host_ = clCreateCommandQueue(ctx.cl(), ctx.device(), 0, &err);
  DLC_CL_CHECK(err);
  to_device_ = clCreateCommandQueue(ctx.cl(), ctx.device(), 0, &err);
  DLC_CL_CHECK(err);
  const size_t bytes = std::max<size_t>(floats, 1) * sizeof(float);
  pinned_ = clCreateBuffer(ctx.cl(), CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, nullptr,
                           &err);
  DLC_CL_CHECK(err);
  host_ = static_cast<float*>(clEnqueueMapBuffer(to_host_, pinned_, CL_TRUE,
                                                 CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0,
                                                 nullptr, nullptr, &err));
  DLC_CL_CHECK(err);
}

GradientStaging::~GradientStaging() {
  if (to_device_) clFinish(to_device_);
  if (host_) {
    clEnqueueUnmapMemObject(to_host_, pinned_, host_, 0, nullptr, nullptr);
    clFinish(to_host_);
  }
  if (pinned_) clReleaseMemObject(pinned_);
  if (to_host_) clReleaseCommandQueue(to_host_);
  if (to_device_) clReleaseCommandQueue(to_device_);
}

void GradientStaging::ReadAfterCompute(const Net& net, const GradientBucket& bucket,
                                       cl_event* computed, cl_event* done) {
  DLC_CL_CHECK(clEnqueueMarkerWithWaitList(ctx_->queue(), 0, nullptr, computed));
  // The compute queue must reach the marker without waiting for a later
  // synchronisation.
  DLC_CL_CHECK(clFlush(ctx_->queue()));
  const auto& params = net.learnable_params();
  for (size_t i = 0; i < bucket.pieces.size(); ++i) {
    const GradientPiece& piece = bucket.pieces[i];
    const bool last = i + 1 == bucket.pieces.size();
    DLC_CL_CHECK(clEnqueueReadBuffer(to_host_, params[piece.param]->diff(), CL_FALSE,
                                     piece.offset * sizeof(float), piece.count * sizeof(float),
                                     host_ + piece.start, 1, computed, last ? done : nullptr));
  }
  if (bucket.pieces.empty())
    DLC_CL_CHECK(clEnqueueMarkerWithWaitList(to_host_, 1, computed, done));
  DLC_CL_CHECK(clFlush(to_host_));
}

cl_event GradientStaging::Write(const Net& net, const GradientBucket& bucket,
                                const float* source) {
  const auto& params = net.learnable_params();
  cl_event done = nullptr;
  for (size_t i = 0; i < bucket.pieces.size(); ++i) {
    const GradientPiece& piece = bucket.pieces[i];
    const bool last = i + 1 == bucket.pieces.size();
    DLC_CL_CHECK(clEnqueueWriteBuffer(to_device_, params[piece.param]->diff(), CL_FALSE,
                                      piece.offset * sizeof(float), piece.count * sizeof(float),
                                      source + piece.start, 0, nullptr, last ? &done : nullptr));
  }
  if (bucket.pieces.empty())
    DLC_CL_CHECK(clEnqueueMarkerWithWaitList(to_device_, 0, nullptr, &done));
  DLC_CL_CHECK(clFlush(to_device_));
  return done;
}

}  // namespace dlcaffe
