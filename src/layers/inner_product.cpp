// InnerProduct (Caffe "InnerProduct"): a fully connected layer. The bottom is
// seen as M x K, M = product of the axes before `axis`, K = of the rest; the
// top is M x N, N = num_output. Weights are N x K (K x N with transpose), the
// bias has N entries, as in Caffe, so .caffemodel files load unchanged.
#include "../core/channel_sums.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class InnerProductLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "InnerProduct"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::InnerProductParameter& p = param_.inner_product_param();
    DLC_REQUIRE(p.num_output() > 0, Where() << "num_output must be set and positive");
    N_ = p.num_output();
    bias_term_ = p.bias_term();
    transpose_ = p.transpose();
    const int axis = bottom[0]->CanonicalAxisIndex(p.axis());
    K_ = bottom[0]->count(axis);
    if (blobs_.empty()) CreateParameters();  // else shared or loaded already
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int axis = bottom[0]->CanonicalAxisIndex(param_.inner_product_param().axis());
    DLC_REQUIRE(bottom[0]->count(axis) == K_,
                Where() << "input " << bottom[0]->shape_string() << " has "
                        << bottom[0]->count(axis) << " inputs per row from axis " << axis
                        << ", but the weights expect " << K_);
    M_ = bottom[0]->count(0, axis);
    std::vector<int> top_shape(bottom[0]->shape().begin(),
                               bottom[0]->shape().begin() + axis + 1);
    top_shape[axis] = N_;
    top[0]->Reshape(top_shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    // top (M x N) = bottom (M x K) * W^T, with W stored N x K (or K x N).
    Gemm(*ctx_, Transpose::kNo, transpose_ ? Transpose::kNo : Transpose::kYes, M_, N_, K_,
         1.f, bottom[0]->data(), 0, blobs_[0]->data(), 0, 0.f, top[0]->data(), 0);
    if (bias_term_) {
      const int count = M_ * N_;
      ctx_->Launch1D(ctx_->Kernel("inner_product.cl", "", "add_bias"), count, count, N_,
                     blobs_[1]->data(), top[0]->data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const cl_mem top_diff = top[0]->diff();
    if (param_propagate_down(0)) {
      if (transpose_) {  // dW (K x N) += bottom^T (K x M) * top_diff (M x N)
        Gemm(*ctx_, Transpose::kYes, Transpose::kNo, K_, N_, M_, 1.f, bottom[0]->data(), 0,
             top_diff, 0, 1.f, blobs_[0]->diff(), 0);
      } else {  // dW (N x K) += top_diff^T (N x M) * bottom (M x K)
        Gemm(*ctx_, Transpose::kYes, Transpose::kNo, N_, K_, M_, 1.f, top_diff, 0,
             bottom[0]->data(), 0, 1.f, blobs_[0]->diff(), 0);
      }
    }
    if (bias_term_ && param_propagate_down(1)) AccumulateBiasGradient(top_diff);
    if (propagate_down[0]) {  // bottom_diff (M x K) = top_diff (M x N) * W
      Gemm(*ctx_, Transpose::kNo, transpose_ ? Transpose::kYes : Transpose::kNo, M_, K_, N_,
           1.f, top_diff, 0, blobs_[0]->data(), 0, 0.f, bottom[0]->diff(), 0);
    }
  }

 private:
  // bias_diff += the column sums of top_diff (M x N): per-channel sums with
  // the N columns as channels over M rows of one element each.
  void AccumulateBiasGradient(cl_mem top_diff) {
    ChannelSums(*ctx_, ChannelSumKind::kProducts, M_, N_, 1, top_diff, nullptr,
                {blobs_[1]->diff(), 0, true}, {}, &bias_sums_);
  }

  void CreateParameters() {
    const caffe::InnerProductParameter& p = param_.inner_product_param();
    const std::vector<int> weight_shape =
        transpose_ ? std::vector<int>{K_, N_} : std::vector<int>{N_, K_};
    blobs_.push_back(std::make_shared<Blob>(*ctx_, weight_shape));
    FillBlob(p.weight_filler(), blobs_[0].get());
    if (bias_term_) {
      blobs_.push_back(std::make_shared<Blob>(*ctx_, std::vector<int>{N_}));
      FillBlob(p.bias_filler(), blobs_[1].get());
    }
  }

  int M_ = 0, K_ = 0, N_ = 0;
  bool bias_term_ = true, transpose_ = false;
  ReduceWorkspace bias_sums_;
};

REGISTER_LAYER_CLASS(InnerProduct);

}  // namespace dlcaffe
