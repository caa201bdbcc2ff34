// A layer whose top is a view of its one bottom: its Reshape gives the top a
// new shape and makes it share the bottom's data and diff (Flatten,
// Reshape). Forward and backward then copy nothing; they copy, in the blob's
// storage type, only if a caller has given the top storage of its own since.
// Values pass through untouched, so any storage type will do.
#pragma once
#include "core/blob_copy.hpp"
#include "dlcaffe/layer.hpp"

namespace dlcaffe {

class ViewLayer : public Layer {
 public:
  using Layer::Layer;
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool SupportsStorage(StorageType) const override { return true; }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    CopyBlobValues(*ctx_, *bottom[0], bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (propagate_down[0]) CopyBlobValues(*ctx_, *bottom[0], top[0]->diff(), bottom[0]->diff());
  }

};

}  // namespace dlcaffe
