// SigmoidCrossEntropyLoss (Caffe "SigmoidCrossEntropyLoss"): the
// cross-entropy of sigmoid(scores) against targets in [0, 1] of the same
// count, in Caffe's overflow-free form. As in Caffe master: targets whose
// integer part equals loss_param.ignore_label are skipped, and the loss is
// normalized by loss_param.normalization when set, else by the legacy
// `normalize` (true: VALID, false: BATCH_SIZE), else by BATCH_SIZE — not by
// the proto's VALID default. The loss is a 0-d top computed on the device.
//
// In mixed precision the scores and their gradient may be 16-bit; the
// targets (labels from the data, which get no gradient; their integer part
// is compared with ignore_label) and the loss stay float32.
#include <CL/cl.h>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SigmoidCrossEntropyLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "SigmoidCrossEntropyLoss"; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsBottomInFloat(int index) const override { return index == 1; }
  bool KeepsTopInFloat(int) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::LayerSetUp(bottom, top);
    const caffe::LossParameter& loss = param_.loss_param();
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();
    if (loss.has_normalization()) {
      normalization_ = loss.normalization();
    } else if (loss.has_normalize()) {
      normalization_ = loss.normalize() ? caffe::LossParameter_NormalizationMode_VALID
                                        : caffe::LossParameter_NormalizationMode_BATCH_SIZE;
    } else {
      normalization_ = caffe::LossParameter_NormalizationMode_BATCH_SIZE;
    }
    normalizer_ = ctx_->Allocate(sizeof(cl_float));
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    DLC_REQUIRE(bottom[0]->count() == bottom[1]->count(),
                Where() << "the scores and the targets must have the same count, got "
                        << bottom[0]->shape_string() << " and " << bottom[1]->shape_string());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    ctx_->Launch(Kernel(*bottom[0], "sigmoid_cross_entropy_loss_forward"),
                 NDRange(kLossGroup), NDRange(kLossGroup), bottom[0]->count(),
                 bottom[0]->shape(0), bottom[0]->data(), bottom[1]->data(),
                 (int)has_ignore_label_, ignore_label_, (int)normalization_, top[0]->data(),
                 normalizer_->mem());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the target input");
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    ctx_->Launch1D(Kernel(*bottom[0], "sigmoid_cross_entropy_loss_backward"), count, count,
                   bottom[0]->data(), bottom[1]->data(), (int)has_ignore_label_, ignore_label_,
                   top[0]->diff(), normalizer_->mem(), bottom[0]->diff());
  }

 private:
  // The scores' storage type picks the kernels' DATA_TYPE.
  cl_kernel Kernel(const Blob& scores, const char* name) {
    return ctx_->Kernel("sigmoid_cross_entropy_loss.cl",
                        StorageOption("DATA_TYPE", scores.storage_type()), name);
  }

  static constexpr size_t kLossGroup = 128;  // LOSS_GROUP in the .cl
  static_assert(caffe::LossParameter_NormalizationMode_FULL == 0 &&
                    caffe::LossParameter_NormalizationMode_VALID == 1 &&
                    caffe::LossParameter_NormalizationMode_BATCH_SIZE == 2 &&
                    caffe::LossParameter_NormalizationMode_NONE == 3,
                "sigmoid_cross_entropy_loss.cl numbers the normalization modes as caffe.proto");

  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  caffe::LossParameter::NormalizationMode normalization_ =
      caffe::LossParameter_NormalizationMode_BATCH_SIZE;
  BufferPtr normalizer_;  // 1 float, written by forward for backward
};

REGISTER_LAYER_CLASS(SigmoidCrossEntropyLoss);

}  // namespace dlcaffe
