#include "dlcaffe/layer.hpp"

#include <glog/logging.h>

#include "dlcaffe/math.hpp"

namespace dlcaffe {

Layer::Layer(const caffe::LayerParameter& param, Context& ctx)
    : choices_(DecideLayerChoices(ctx.options(), ctx.info())), param_(param), ctx_(&ctx) {}

std::string Layer::Where() const {
  return "layer '" + param_.name() + "' (" + param_.type() + "): ";
}

void Layer::SetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
  CheckBlobCounts(bottom, top);
  LayerSetUp(bottom, top);
  // Parameter gradients accumulate (shared parameters, iter_size): a new
  // layer's start from zero, as Caffe's do, whatever fresh memory holds.
  for (const auto& blob : blobs_)
    if (blob->count() > 0) blob->SetDiff(0.f);
  Reshape(bottom, top);
  SetLossWeights(top);
}

void Layer::set_loss(int top_index, float value) {
  if ((int)loss_.size() <= top_index) loss_.resize(top_index + 1, 0.f);
  loss_[top_index] = value;
}

void Layer::set_param_propagate_down(int param_id, bool value) {
  if ((int)param_propagate_down_.size() <= param_id)
    param_propagate_down_.resize(param_id + 1, true);
  param_propagate_down_[param_id] = value;
}

void Layer::CheckBlobCounts(const std::vector<Blob*>& bottom,
                            const std::vector<Blob*>& top) const {
  const int nb = static_cast<int>(bottom.size()), nt = static_cast<int>(top.size());
  DLC_REQUIRE(ExactNumBottomBlobs() < 0 || nb == ExactNumBottomBlobs(),
              Where() << "takes " << ExactNumBottomBlobs() << " bottom blob(s), got " << nb);
  DLC_REQUIRE(MinBottomBlobs() < 0 || nb >= MinBottomBlobs(),
              Where() << "takes at least " << MinBottomBlobs() << " bottom blob(s), got " << nb);
  DLC_REQUIRE(MaxBottomBlobs() < 0 || nb <= MaxBottomBlobs(),
              Where() << "takes at most " << MaxBottomBlobs() << " bottom blob(s), got " << nb);
  DLC_REQUIRE(ExactNumTopBlobs() < 0 || nt == ExactNumTopBlobs(),
              Where() << "produces " << ExactNumTopBlobs() << " top blob(s), got " << nt);
  DLC_REQUIRE(MinTopBlobs() < 0 || nt >= MinTopBlobs(),
              Where() << "produces at least " << MinTopBlobs() << " top blob(s), got " << nt);
  DLC_REQUIRE(MaxTopBlobs() < 0 || nt <= MaxTopBlobs(),
              Where() << "produces at most " << MaxTopBlobs() << " top blob(s), got " << nt);
  DLC_REQUIRE(!EqualNumBottomTopBlobs() || nb == nt,
              Where() << "needs as many tops as bottoms, got " << nb << " and " << nt);
}

void Layer::SetLossWeights(const std::vector<Blob*>& top) {
  const int n = param_.loss_weight_size();
  if (n == 0) return;
  DLC_REQUIRE(n == (int)top.size(), Where() << "has " << n << " loss_weight value(s) for "
                                            << top.size() << " top blob(s)");
  for (int i = 0; i < n; ++i) {
    const float w = param_.loss_weight(i);
    set_loss(i, w);
    // The top's diff holds the loss weight: backward starts from it.
    if (w != 0.f) top[i]->SetDiff(w);
  }
}

void LossLayer::LayerSetUp(const std::vector<Blob*>& bottom,
                           const std::vector<Blob*>& top) {
  if (param_.loss_weight_size() == 0) param_.add_loss_weight(1.f);
}

void LossLayer::Reshape(const std::vector<Blob*>& bottom,
                        const std::vector<Blob*>& top) {
  DLC_REQUIRE(bottom[0]->shape(0) == bottom[1]->shape(0),
              Where() << "the data and label blobs must have the same first "
                         "dimension, got " << bottom[0]->shape_string() << " and "
                      << bottom[1]->shape_string());
  top[0]->Reshape(std::vector<int>{});  // a scalar
}

}  // namespace dlcaffe
