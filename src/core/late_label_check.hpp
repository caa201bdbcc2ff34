// The lazily checked label or index of layers that take integer values from a
// blob (the loss layers' labels, Embed's indices).
//
// Why: Forward only enqueues work, so labels and indices are never read to the
// host on the hot path. Instead the layer's kernel records the first bad value
// on the device (and makes that pass's output NaN), a non-blocking read brings
// the record back, and the next Forward after that read has completed throws a
// clear error naming the layer, the position, the value and the valid range.
//
// Use: pass record() to the kernel, which writes {position, value's float
// bits} into it unless a position (>= 0) is there already; call ReadLater()
// after the pass's kernels and TakeBadValue() before the next pass's.
#pragma once
#include <CL/cl.h>

#include <optional>
#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

class LateLabelCheck {
 public:
  struct BadValue {
    int position;  // in the blob of labels or indices
    float value;
  };

  explicit LateLabelCheck(Context& ctx);
  ~LateLabelCheck();  // waits for a read in flight: it writes into this object
  LateLabelCheck(const LateLabelCheck&) = delete;
  LateLabelCheck& operator=(const LateLabelCheck&) = delete;

  // The device record: {first bad position or -1, its value's float bits}.
  cl_mem record() const { return record_->mem(); }

  // After a pass's kernels: starts the read, at most one in flight.
  void ReadLater();

  // Before a pass: the bad value a finished read has brought (the record is
  // then cleared), or nothing while no read has completed or none was bad.
  std::optional<BadValue> TakeBadValue();

 private:
  void ResetRecord();

  Context& ctx_;
  BufferPtr record_;
  cl_int host_[2] = {-1, 0};
  cl_event read_ = nullptr;
};

// The loss layers' message for a bad label (to follow the layer's Where()):
// "label 7 at position 3 of the label blob is out of range [0, 5) (...)".
std::string BadLabelMessage(const LateLabelCheck::BadValue& bad, int num_classes);

}  // namespace dlcaffe
