// InnerProduct (Caffe "InnerProduct"): a fully connected layer. The bottom is
// seen as M x K, M = product of the axes before `axis`, K = of the rest; the
// top is M x N, N = num_output. Weights are N x K (K x N with transpose), the
// bias has N entries, as in Caffe, so .caffemodel files load unchanged.
// Bottom and top may be stored in 16 bits (mixed precision); the weights,
// their gradients and the products' sums stay float. The products' inputs
// may be rounded to the layer's forward / backward math (core/layer_math.hpp).
#include "../core/channel_sums.hpp"
#include "../core/layer_math.hpp"
#include "../core/matrix_engine.hpp"
#include "../core/pointwise_kernel.hpp"
#include "../core/typed_product.hpp"
#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;
// top[m][n] += bias[n]: the N columns as channels of one element each.
const PointwiseKernel kAddBias("inner_product_add_bias", {InOut("y"), Channel("bias")},
                               "y = y + bias;");
}  // namespace

class InnerProductLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "InnerProduct"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool SupportsStorage(StorageType) const override { return true; }

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
    Math(*bottom[0], false);  // a math field that is not a math type fails here
    Math(*bottom[0], true);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    // top (M x N) = bottom (M x K) * W^T, with W stored N x K (or K x N).
    const MatrixMath math = Math(*bottom[0], false);
    const BufferPtr rounded = RoundedWeights(*bottom[0], math);
    GemmArgs product = TypedProduct(false, !transpose_, M_, N_, K_, Data(*bottom[0]),
                                    Weights(rounded, *bottom[0]), Data(*top[0]), 0.f, math,
                                    choices_);
    // The bias is added in the GEMM's epilogue, before a 16-bit top is
    // rounded: one rounding and no second pass over the top. The epilogue
    // reads a float bias, which a 16-bit one is not.
    const bool bias_in_product = bias_term_ && Data(*blobs_[1]).type == StorageType::kFloat32;
    if (bias_in_product) {
      product.bias = blobs_[1]->data();
      product.bias_per_column = true;
    }
    Gemm(*ctx_, product);
    if (bias_term_ && !bias_in_product)
      kAddBias.Launch(*ctx_, M_ * N_, {Data(*top[0]), Data(*blobs_[1])}, {}, {N_, 1},
                      KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const BufferArg top_diff = Diff(*top[0]);
    const MatrixMath math = Math(*bottom[0], true);
    if (param_propagate_down(0)) {
      if (transpose_) {  // dW (K x N) += bottom^T (K x M) * top_diff (M x N)
        Product(Transpose::kYes, Transpose::kNo, K_, N_, M_, Data(*bottom[0]), top_diff, 1.f,
                Diff(*blobs_[0]), math);
      } else {  // dW (N x K) += top_diff^T (N x M) * bottom (M x K)
        Product(Transpose::kYes, Transpose::kNo, N_, K_, M_, top_diff, Data(*bottom[0]), 1.f,
                Diff(*blobs_[0]), math);
      }
    }
    if (bias_term_ && param_propagate_down(1)) AccumulateBiasGradient(top_diff);
    if (propagate_down[0]) {  // bottom_diff (M x K) = top_diff (M x N) * W
      const BufferPtr rounded = RoundedWeights(*bottom[0], math);
      Product(Transpose::kNo, transpose_ ? Transpose::kYes : Transpose::kNo, M_, K_, N_,
              top_diff, Weights(rounded, *bottom[0]), 0.f, Diff(*bottom[0]), math);
    }
  }

 private:
  // The math of the forward or the backward products, the bottom's storage
  // type where the layer sets none.
  MatrixMath Math(const Blob& bottom, bool backward) const {
    return backward ? BackwardMatrixMath(param_, bottom.storage_type(), choices_)
                    : ForwardMatrixMath(param_, bottom.storage_type(), choices_);
  }

  // The weights rounded to the bottom's 16-bit type for products in `math`
  // where the tensor cores would round them as they load them (the same
  // product, but one the cp.async pipeline can stream); else null. Kept
  // until the weights change: the forward and backward products of a
  // training step, and every forward of an inference net, share one.
  BufferPtr RoundedWeights(const Blob& bottom, MatrixMath math) {
    return MmaRoundedWeights(*ctx_, choices_, *blobs_[0], math, bottom.storage_type(),
                             rounded_weights_);
  }
  DerivedCopy rounded_weights_;
  BufferArg Weights(const BufferPtr& rounded, const Blob& bottom) const {
    return rounded ? BufferArg(rounded->mem(), bottom.storage_type()) : Data(*blobs_[0]);
  }

  // C = op(A) op(B) + beta C over operands of any storage type.
  void Product(Transpose trans_a, Transpose trans_b, int M, int N, int K, const BufferArg& a,
               const BufferArg& b, float beta, const BufferArg& c, MatrixMath math) {
    Gemm(*ctx_, TypedProduct(trans_a == Transpose::kYes, trans_b == Transpose::kYes, M, N, K, a,
                             b, c, beta, math, choices_));
  }

  // bias_diff += the column sums of top_diff (M x N), of any storage type:
  // per-channel sums with the N columns as channels over M rows of one
  // element each (swept by columns on a GPU: reduce_kernel.hpp).
  void AccumulateBiasGradient(const BufferArg& top_diff) {
    ChannelSums(*ctx_, KernelShapeOf(choices_), ChannelSumKind::kProducts, M_, N_, 1, top_diff,
                nullptr, {blobs_[1]->diff(), 0, true}, {}, &bias_sums_);
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
REGISTER_LAYER_TRAITS(InnerProduct, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
