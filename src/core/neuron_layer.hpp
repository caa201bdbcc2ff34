// Base of Caffe's neuron layers: one bottom, one top shaped like it, computed
// element by element; in-place use (top == bottom) is allowed.
//
// In place, Forward overwrites x with y. Layers whose Backward needs x (AbsVal,
// BNLL, Clip, Log, Power, PReLU) say so with BackwardReadsBottom(); Forward then
// starts with KeepBottomIfInPlace(), which copies x into an internal blob, and
// Backward reads x through BottomForBackward(). Layers whose gradient follows
// from y alone (Sigmoid, TanH, Exp, ...) pay nothing.
#pragma once
#include <memory>
#include <vector>

#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class NeuronLayer : public Layer {
 public:
  using Layer::Layer;
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    top[0]->ReshapeLike(*bottom[0]);
    if (InPlace(bottom, top) && BackwardReadsBottom()) {
      if (!bottom_copy_) bottom_copy_ = std::make_unique<Blob>(*ctx_);
      bottom_copy_->set_storage_type(bottom[0]->storage_type());
      bottom_copy_->ReshapeLike(*bottom[0]);
    }
  }

 protected:
  static bool InPlace(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
    return bottom[0] == top[0];
  }
  // Whether Backward needs the bottom's values x (not only y and dy).
  virtual bool BackwardReadsBottom() const { return false; }

  // Call before Forward's kernels: in place, saves x for Backward.
  void KeepBottomIfInPlace(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
    if (!InPlace(bottom, top) || !BackwardReadsBottom()) return;
    ctx_->Copy(bottom[0]->data(), 0, bottom_copy_->data(), 0,
               static_cast<size_t>(bottom[0]->count()) * bottom[0]->element_bytes());
  }
  // x as Forward saw it: the bottom's data, or the copy kept in place (in
  // the bottom's storage type).
  pointwise::BufferArg BottomForBackward(const std::vector<Blob*>& bottom,
                                         const std::vector<Blob*>& top) const {
    return pointwise::Data(InPlace(bottom, top) && BackwardReadsBottom() ? *bottom_copy_
                                                                          : *bottom[0]);
  }

 private:
  std::unique_ptr<Blob> bottom_copy_;
};

}  // namespace dlcaffe
