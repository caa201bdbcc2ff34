// A layer whose top is a view of its one bottom: its Reshape gives the top a
// new shape and makes it share the bottom's data and diff (Flatten,
// Reshape). Forward and backward then copy nothing; they copy, in the blob's
// storage type, only if a caller has given the top storage of its own since.
// Values pass through untouched, so any storage type will do.
#pragma once
#include "dlcaffe/layer.hpp"

namespace dlcaffe {

class ViewLayer : public Layer {
 public:
  using Layer::Layer;
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    CopyIfApart(bottom[0]->data(), top[0]->data(), *bottom[0]);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (propagate_down[0]) CopyIfApart(top[0]->diff(), bottom[0]->diff(), *bottom[0]);
  }

 private:
  void CopyIfApart(cl_mem from, cl_mem to, const Blob& blob) {
    if (from != to) ctx_->Copy(from, 0, to, 0, blob.count() * blob.element_bytes());
  }
};

}  // namespace dlcaffe
