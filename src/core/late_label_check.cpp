#include "core/late_label_check.hpp"

#include <cstring>
#include <sstream>

namespace dlcaffe {

LateLabelCheck::LateLabelCheck(Context& ctx)
    : ctx_(ctx), record_(ctx.Allocate(sizeof(host_))) {
  ResetRecord();
}

LateLabelCheck::~LateLabelCheck() {
  if (!read_) return;
  clWaitForEvents(1, &read_);
  clReleaseEvent(read_);
}

void LateLabelCheck::ReadLater() {
  if (read_) return;
  DLC_CL_CHECK(clEnqueueReadBuffer(ctx_.queue(), record_->mem(), CL_FALSE, 0, sizeof(host_),
                                   host_, 0, nullptr, &read_));
}

std::optional<LateLabelCheck::BadValue> LateLabelCheck::TakeBadValue() {
  if (!read_) return std::nullopt;
  cl_int status = CL_QUEUED;
  DLC_CL_CHECK(clGetEventInfo(read_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                              &status, nullptr));
  if (status > CL_COMPLETE) return std::nullopt;  // still queued or running
  clReleaseEvent(read_);
  read_ = nullptr;
  if (status < 0) ThrowClError("reading a label or index check", status);
  if (host_[0] < 0) return std::nullopt;
  BadValue bad;
  bad.position = host_[0];
  std::memcpy(&bad.value, &host_[1], sizeof(bad.value));
  host_[0] = -1;
  ResetRecord();
  return bad;
}

void LateLabelCheck::ResetRecord() {
  const cl_int none[2] = {-1, 0};
  ctx_.Write(record_->mem(), 0, sizeof(none), none);
}

std::string BadLabelMessage(const LateLabelCheck::BadValue& bad, int num_classes) {
  std::ostringstream message;
  message << "label " << bad.value << " at position " << bad.position
          << " of the label blob is out of range [0, " << num_classes
          << ") (found after an earlier forward pass, whose loss was NaN)";
  return message.str();
}

}  // namespace dlcaffe
