// EuclideanLoss (Caffe "EuclideanLoss"): E = 1/(2N) * sum ||a_n - b_n||^2.
// Unlike most losses both bottoms may receive gradients (dE/db = -dE/da).
// In mixed precision both bottoms and their gradients may be 16-bit (one
// type for both); the differences, the sums and the loss are float.
#include <string>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class EuclideanLossLayer : public LossLayer {
 public:
  EuclideanLossLayer(const caffe::LayerParameter& param, Context& ctx)
      : LossLayer(param, ctx), diff_(ctx), squares_(ctx) {}
  const char* type() const override { return "EuclideanLoss"; }
  bool AllowForceBackward(int) const override { return true; }
  bool SupportsStorage(StorageType) const override { return true; }
  bool KeepsTopInFloat(int) const override { return true; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    LossLayer::Reshape(bottom, top);
    DLC_REQUIRE(bottom[0]->count(1) == bottom[1]->count(1),
                Where() << "inputs must have the same dimension, got "
                        << bottom[0]->shape_string() << " and " << bottom[1]->shape_string());
    DLC_REQUIRE(bottom[0]->storage_type() == bottom[1]->storage_type(),
                Where() << "stores both inputs in one type, got "
                        << StorageTypeName(bottom[0]->storage_type()) << " and "
                        << StorageTypeName(bottom[1]->storage_type()));
    diff_.ReshapeLike(*bottom[0]);
    squares_.ReshapeLike(*bottom[0]);
    options_ = StorageOption("DATA_TYPE", bottom[0]->storage_type());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("euclidean_loss.cl", options_, "euclidean_diff"), n, n,
                   bottom[0]->data(), bottom[1]->data(), diff_.data(), squares_.data());
    SumToScalar(*ctx_, n, squares_.data(), 0, 0.5f / bottom[0]->shape(0), top[0]->data(), 0);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const int n = bottom[0]->count();
    for (int i = 0; i < 2; ++i) {
      if (!propagate_down[i]) continue;
      const float sign = i == 0 ? 1.f : -1.f;
      ctx_->Launch1D(ctx_->Kernel("euclidean_loss.cl", options_, "euclidean_backward"), n, n,
                     sign / bottom[i]->shape(0), top[0]->diff(), diff_.data(),
                     bottom[i]->diff());
    }
  }

 private:
  Blob diff_, squares_;  // float
  std::string options_;  // the bottoms' storage type
};

REGISTER_LAYER_CLASS(EuclideanLoss);

}  // namespace dlcaffe
