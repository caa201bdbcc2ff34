#include "core/softmax_label_loss.hpp"

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

static_assert(caffe::LossParameter_NormalizationMode_FULL == 0 &&
                  caffe::LossParameter_NormalizationMode_VALID == 1 &&
                  caffe::LossParameter_NormalizationMode_BATCH_SIZE == 2 &&
                  caffe::LossParameter_NormalizationMode_NONE == 3,
              "common.cl numbers the normalization modes as caffe.proto");

void SoftmaxLabelLossLayer::LayerSetUp(const std::vector<Blob*>& bottom,
                                       const std::vector<Blob*>& top) {
  LossLayer::LayerSetUp(bottom, top);
  caffe::LayerParameter softmax_param = param_;
  softmax_param.set_type("Softmax");
  softmax_param.set_name(param_.name() + "/softmax");
  softmax_param.clear_loss_weight();
  softmax_param.mutable_softmax_param()->set_axis(SoftmaxAxis());
  softmax_ = LayerRegistry::Create(softmax_param, *ctx_);
  softmax_->set_choices(choices_);  // no plan decides for it: it runs as this layer
  prob_.set_storage_type(bottom[0]->storage_type());
  softmax_->SetUp({bottom[0]}, {&prob_});

  const caffe::LossParameter& loss = param_.loss_param();
  has_ignore_label_ = loss.has_ignore_label();
  ignore_label_ = loss.ignore_label();
  normalization_ = Normalization();
  normalizer_ = ctx_->Allocate(sizeof(cl_float));
  label_check_ = std::make_unique<LateLabelCheck>(*ctx_);
}

void SoftmaxLabelLossLayer::Reshape(const std::vector<Blob*>& bottom,
                                    const std::vector<Blob*>& top) {
  LossLayer::Reshape(bottom, top);
  softmax_->set_choices(choices_);  // this layer's may have changed (Net::set_options)
  softmax_->Reshape({bottom[0]}, {&prob_});
  const int axis = bottom[0]->CanonicalAxisIndex(SoftmaxAxis());
  outer_ = bottom[0]->count(0, axis);
  classes_ = bottom[0]->shape(axis);
  inner_ = bottom[0]->count(axis + 1);
  DLC_REQUIRE(outer_ * inner_ == bottom[1]->count(),
              Where() << "the number of labels must match the number of predictions: "
                         "predictions "
                      << bottom[0]->shape_string() << " with softmax axis " << axis << " need "
                      << outer_ * inner_ << " labels, got " << bottom[1]->shape_string());
  if (top.size() > 1) top[1]->ReshapeLike(*bottom[0]);
}

void SoftmaxLabelLossLayer::ThrowLateErrors() {
  if (const auto bad = label_check_->TakeBadValue())
    DLC_FAIL(Where() << BadLabelMessage(*bad, classes_));
}

cl_kernel SoftmaxLabelLossLayer::Kernel(const char* file, const char* name) {
  return ctx_->Kernel(file, StorageOption("DATA_TYPE", prob_.storage_type()), name);
}

void SoftmaxLabelLossLayer::ForwardSoftmax(const std::vector<Blob*>& bottom,
                                           const std::vector<Blob*>& top) {
  ThrowLateErrors();
  softmax_->Forward({bottom[0]}, {&prob_});
  if (top.size() > 1) top[1]->ShareData(prob_);
}

}  // namespace dlcaffe
