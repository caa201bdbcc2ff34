// What SoftmaxWithLoss and InfogainLoss share: a softmax over one axis of
// the scores (a Softmax layer inside), integer labels of outer x inner
// positions with Caffe's LossParameter (ignore_label, normalization), a 0-d
// loss written on the device by one work-group (src/cl/label_loss_group.cl)
// with the normalizer kept for backward, an optional second top sharing the
// probabilities, and labels checked late (LateLabelCheck: a bad label makes
// that pass's loss NaN and a later Forward throw). A subclass says which
// axis, how the legacy `normalize` reads, and launches its own kernels.
//
// In mixed precision the scores, probabilities and their gradient may be
// 16-bit; the labels (16 bits hold integers only to 2048, bfloat16's to 256)
// and the loss stay float32, and so does a layer with the probabilities as a
// second top. Internal to the library.
#pragma once
#include <CL/cl.h>

#include <memory>
#include <string>

#include "core/late_label_check.hpp"
#include "dlcaffe/layer.hpp"

namespace dlcaffe {

class SoftmaxLabelLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool SupportsStorage(StorageType) const override { return param_.top_size() < 2; }
  bool KeepsTopInFloat(int index) const override { return index == 0; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override;
  void ThrowLateErrors() override;

 protected:
  // The axis the softmax and the classes run along (its own field).
  virtual int SoftmaxAxis() const = 0;
  // The normalization the layer's loss_param gives (a subclass refuses or
  // reads the legacy `normalize`).
  virtual caffe::LossParameter::NormalizationMode Normalization() const = 0;
  // The kernel `name` of `file`, for the probabilities' storage type.
  cl_kernel Kernel(const char* file, const char* name);
  // The softmax of the scores; the second top shares the probabilities.
  void ForwardSoftmax(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top);
  // After the loss kernel, which records a bad label in label_error().
  void AfterLossKernel() { label_check_->ReadLater(); }
  cl_mem label_error() { return label_check_->record(); }

  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in label_loss_group.cl

  std::unique_ptr<Layer> softmax_;
  Blob prob_{*ctx_};
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  caffe::LossParameter::NormalizationMode normalization_ =
      caffe::LossParameter_NormalizationMode_VALID;
  int outer_ = 0, classes_ = 0, inner_ = 0;
  BufferPtr normalizer_;  // 1 float, written by forward for backward

 private:
  std::unique_ptr<LateLabelCheck> label_check_;
};

}  // namespace dlcaffe
