// Dropout (Caffe "Dropout"). At TRAIN each element is zeroed with probability
// dropout_ratio p and the kept ones are scaled by 1 / (1 - p), so TEST is the
// identity, as in Caffe 1.0. The mask is drawn on the device
// from a per-pass seed (Context::rng(), so runs are reproducible) and
// Backward recomputes it from the same seed. Works in place.
#include <string>

#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"
#include "core/neuron_layer.hpp"
#include "core/storage_option.hpp"

namespace dlcaffe {

class DropoutLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Dropout"; }
  bool SupportsStorage(StorageType) const override { return true; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::DropoutParameter& p = param_.dropout_param();
    ratio_ = p.dropout_ratio();
    DLC_REQUIRE(ratio_ >= 0.f && ratio_ < 1.f,
                Where() << "dropout_ratio must be in [0, 1), got " << ratio_);
    train_scale_ = 1.f / (1.f - ratio_);
    test_scale_ = 1.f;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    if (param_.phase() == caffe::TRAIN) {
      seed_ = static_cast<int>(ctx_->rng()() & 0x7fffffff);
      Launch("dropout_forward", *bottom[0], n, seed_, ratio_, train_scale_, bottom[0]->data(),
             top[0]->data());
    } else {
      ApplyTestScale(*bottom[0], bottom[0]->data(), top[0]->data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    if (param_.phase() == caffe::TRAIN) {
      Launch("dropout_backward", *bottom[0], n, seed_, ratio_, train_scale_, top[0]->diff(),
             bottom[0]->diff());
    } else {
      ApplyTestScale(*bottom[0], top[0]->diff(), bottom[0]->diff());
    }
  }

 private:
  // `blob` gives the storage type (bottom and top share it).
  template <typename... Args>
  void Launch(const char* kernel, const Blob& blob, int n, const Args&... args) {
    ctx_->Launch1D(
        ctx_->Kernel("dropout.cl", StorageOption("DATA_TYPE", blob.storage_type()), kernel), n,
        n, args...);
  }

  // out = test_scale * in (in and out of `blob`'s count and type): a copy
  // (nothing in place) when the scale is 1.
  void ApplyTestScale(const Blob& blob, cl_mem in, cl_mem out) {
    const int n = blob.count();
    if (test_scale_ == 1.f) {
      if (in != out) ctx_->Copy(in, 0, out, 0, static_cast<size_t>(n) * blob.element_bytes());
    } else {
      // Ratio 0 keeps every element: a plain scaling.
      Launch("dropout_forward", blob, n, 0, 0.f, test_scale_, in, out);
    }
  }

  float ratio_ = 0.5f;
  float train_scale_ = 2.f;
  float test_scale_ = 1.f;
  int seed_ = 0;  // the mask of the last TRAIN Forward, for Backward
};

REGISTER_LAYER_CLASS(Dropout);
REGISTER_LAYER_TRAITS(Dropout, LayerTraits().RunsInPlace());

}  // namespace dlcaffe
