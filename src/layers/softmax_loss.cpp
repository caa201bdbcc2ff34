// SoftmaxWithLoss (Caffe "SoftmaxWithLoss"): softmax over softmax_param.axis
// followed by the multinomial logistic loss of the integer labels, with
// Caffe's LossParameter (ignore_label; normalization FULL, VALID, BATCH_SIZE or
// NONE; the legacy `normalize` bool). The loss is a 0-d top computed on the
// device; an optional second top shares the probabilities.
//
// Labels are never read on the host. A label out of range is a user error,
// found lazily: the loss kernel records the first bad label on the device and
// makes that pass's loss NaN; a non-blocking read brings the record to the
// host, and the next Forward after that read has completed throws.
#include <CL/cl.h>

#include <cstring>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SoftmaxWithLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  ~SoftmaxWithLossLayer() override {
    if (label_error_read_) {
      clWaitForEvents(1, &label_error_read_);  // it writes into this object
      clReleaseEvent(label_error_read_);
    }
  }
  const char* type() const override { return "SoftmaxWithLoss"; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    caffe::LayerParameter softmax_param = param_;
    softmax_param.set_type("Softmax");
    softmax_param.set_name(param_.name() + "/softmax");
    softmax_param.clear_loss_weight();
    softmax_ = LayerRegistry::Create(softmax_param, *ctx_);
    softmax_->SetUp({bottom[0]}, {&prob_});

    const caffe::LossParameter& loss = param_.loss_param();
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();
    if (!loss.has_normalization() && loss.has_normalize()) {
      normalization_ = loss.normalize() ? caffe::LossParameter_NormalizationMode_VALID
                                        : caffe::LossParameter_NormalizationMode_BATCH_SIZE;
    } else {
      normalization_ = loss.normalization();
    }
    normalizer_ = ctx_->Allocate(sizeof(cl_float));
    label_error_ = ctx_->Allocate(2 * sizeof(cl_int));
    ResetLabelError();
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    softmax_->Reshape({bottom[0]}, {&prob_});
    const int axis = bottom[0]->CanonicalAxisIndex(param_.softmax_param().axis());
    outer_ = bottom[0]->count(0, axis);
    channels_ = bottom[0]->shape(axis);
    inner_ = bottom[0]->count(axis + 1);
    DLC_REQUIRE(outer_ * inner_ == bottom[1]->count(),
                Where() << "the number of labels must match the number of predictions: "
                           "predictions "
                        << bottom[0]->shape_string() << " with softmax axis " << axis
                        << " need " << outer_ * inner_ << " labels, got "
                        << bottom[1]->shape_string());
    if (top.size() > 1) top[1]->ReshapeLike(*bottom[0]);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    CheckLabelsOfEarlierPasses();
    softmax_->Forward({bottom[0]}, {&prob_});
    ctx_->Launch(ctx_->Kernel("softmax_loss.cl", "", "softmax_loss_forward"),
                 NDRange(kLossGroup), NDRange(kLossGroup), outer_, channels_, inner_,
                 prob_.data(), bottom[1]->data(), (int)has_ignore_label_, ignore_label_,
                 (int)normalization_, top[0]->data(), normalizer_->mem(),
                 label_error_->mem());
    if (top.size() > 1) top[1]->ShareData(prob_);
    ReadLabelErrorLater();
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the label input");
    if (!propagate_down[0]) return;
    const int count = prob_.count();
    ctx_->Launch1D(ctx_->Kernel("softmax_loss.cl", "", "softmax_loss_backward"), count,
                   count, channels_, inner_, prob_.data(), bottom[1]->data(),
                   (int)has_ignore_label_, ignore_label_, top[0]->diff(),
                   normalizer_->mem(), bottom[0]->diff());
  }

 private:
  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in softmax_loss.cl
  static_assert(caffe::LossParameter_NormalizationMode_FULL == 0 &&
                    caffe::LossParameter_NormalizationMode_VALID == 1 &&
                    caffe::LossParameter_NormalizationMode_BATCH_SIZE == 2 &&
                    caffe::LossParameter_NormalizationMode_NONE == 3,
                "softmax_loss.cl numbers the normalization modes as caffe.proto");

  void ResetLabelError() {
    const cl_int none[2] = {-1, 0};
    ctx_->Write(label_error_->mem(), 0, sizeof(none), none);
  }

  // Brings the device's label-error record to the host without waiting, at
  // most one read in flight.
  void ReadLabelErrorLater() {
    if (label_error_read_) return;
    DLC_CL_CHECK(clEnqueueReadBuffer(ctx_->queue(), label_error_->mem(), CL_FALSE, 0,
                                     sizeof(label_error_host_), label_error_host_, 0,
                                     nullptr, &label_error_read_));
  }

  // Throws for a bad label recorded by an earlier pass, once its read is done.
  void CheckLabelsOfEarlierPasses() {
    if (!label_error_read_) return;
    cl_int status = CL_QUEUED;
    DLC_CL_CHECK(clGetEventInfo(label_error_read_, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                sizeof(status), &status, nullptr));
    if (status > CL_COMPLETE) return;  // still queued or running
    clReleaseEvent(label_error_read_);
    label_error_read_ = nullptr;
    if (status < 0) ThrowClError("reading the label check of SoftmaxWithLoss", status);
    if (label_error_host_[0] < 0) return;
    const int position = label_error_host_[0];
    float label;
    std::memcpy(&label, &label_error_host_[1], sizeof(label));
    ResetLabelError();
    DLC_FAIL(Where() << "label " << label << " at position " << position
                     << " of the label blob is out of range [0, " << channels_
                     << ") (found after an earlier forward pass, whose loss was NaN)");
  }

  std::unique_ptr<Layer> softmax_;
  Blob prob_{*ctx_};
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  caffe::LossParameter::NormalizationMode normalization_ =
      caffe::LossParameter_NormalizationMode_VALID;
  int outer_ = 0, channels_ = 0, inner_ = 0;
  BufferPtr normalizer_;   // 1 float, written by forward for backward
  BufferPtr label_error_;  // {first bad position or -1, its label's float bits}
  cl_int label_error_host_[2] = {-1, 0};
  cl_event label_error_read_ = nullptr;
};

REGISTER_LAYER_CLASS(SoftmaxWithLoss);

}  // namespace dlcaffe
