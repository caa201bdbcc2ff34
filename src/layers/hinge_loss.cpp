// HingeLoss (Caffe "HingeLoss"): one-vs-all hinge loss of scores (num x dim)
// and integer labels (num values). With t = -1 for the label's column and +1
// elsewhere, m = max(0, 1 + t x): loss = 1/num sum m (norm L1, the default)
// or 1/num sum m^2 (L2), Caffe's normalisation by num. The loss is a 0-d top
// computed on the device.
//
// Labels are never read on the host. A label outside [0, dim) is a user
// error, found lazily as SoftmaxWithLoss does: that pass's loss is NaN and a
// later Forward throws.
#include <CL/cl.h>

#include <cstring>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {

// The first bad index (or label) a kernel met, reported one pass late
// without waiting for the device (SoftmaxWithLoss's approach): kernels write
// {position, value bits} into record() unless a position is there already; a
// non-blocking read brings it to the host, and a later pass throws.
class LateLabelCheck {
 public:
  explicit LateLabelCheck(Context& ctx) : ctx_(ctx), record_(ctx.Allocate(2 * sizeof(cl_int))) {
    Reset();
  }
  ~LateLabelCheck() {
    if (!read_) return;
    clWaitForEvents(1, &read_);  // it writes into this object
    clReleaseEvent(read_);
  }
  LateLabelCheck(const LateLabelCheck&) = delete;
  LateLabelCheck& operator=(const LateLabelCheck&) = delete;

  cl_mem record() const { return record_->mem(); }

  // After a pass's kernels: starts the read, at most one in flight.
  void ReadLater() {
    if (read_) return;
    DLC_CL_CHECK(clEnqueueReadBuffer(ctx_.queue(), record_->mem(), CL_FALSE, 0, sizeof(host_),
                                     host_, 0, nullptr, &read_));
  }

  // Before a pass: true, with the bad value and its position, once a
  // finished read has brought a record (which is then cleared).
  bool TakeError(int* position, float* label) {
    if (!read_) return false;
    cl_int status = CL_QUEUED;
    DLC_CL_CHECK(clGetEventInfo(read_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                                &status, nullptr));
    if (status > CL_COMPLETE) return false;  // still queued or running
    clReleaseEvent(read_);
    read_ = nullptr;
    if (status < 0) ThrowClError("reading a label or index check", status);
    if (host_[0] < 0) return false;
    *position = host_[0];
    std::memcpy(label, &host_[1], sizeof(*label));
    host_[0] = -1;
    Reset();
    return true;
  }

 private:
  void Reset() {
    const cl_int none[2] = {-1, 0};
    ctx_.Write(record_->mem(), 0, sizeof(none), none);
  }

  Context& ctx_;
  BufferPtr record_;
  cl_int host_[2] = {-1, 0};
  cl_event read_ = nullptr;
};

}  // namespace

class HingeLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "HingeLoss"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    squared_ = param_.hinge_loss_param().norm() == caffe::HingeLossParameter_Norm_L2;
    label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    DLC_REQUIRE(bottom[1]->count() == bottom[1]->num(),
                Where() << "the labels must hold one value per sample, got "
                        << bottom[1]->shape_string());
    num_ = bottom[0]->num();
    dim_ = num_ > 0 ? bottom[0]->count() / num_ : 0;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    int position;
    float label;
    if (label_check_->TakeError(&position, &label))
      DLC_FAIL(Where() << "label " << label << " at position " << position
                       << " of the label blob is out of range [0, " << dim_
                       << ") (found after an earlier forward pass, whose loss was NaN)");
    ctx_->Launch(ctx_->Kernel("hinge_loss.cl", "", "hinge_loss_forward"), NDRange(kLossGroup),
                 NDRange(kLossGroup), num_, dim_, (int)squared_, bottom[0]->data(),
                 bottom[1]->data(), top[0]->data(), label_check_->record());
    label_check_->ReadLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("hinge_loss.cl", "", "hinge_loss_backward"), count, count,
                   dim_, num_, (int)squared_, bottom[0]->data(), bottom[1]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }

 private:
  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in hinge_loss.cl

  bool squared_ = false;
  int num_ = 0, dim_ = 0;
  std::unique_ptr<LateLabelCheck> label_check_;
};

REGISTER_LAYER_CLASS(HingeLoss);

}  // namespace dlcaffe
