// Eltwise (Caffe "Eltwise"): element-wise PROD, SUM (optionally weighted by
// one coeff per bottom) or MAX of two or more bottoms of the same shape.
//
// Each forward is one launch over all the bottoms (a kernel generated for
// their number). MAX keeps, per element, the index of the bottom that won (for backward).
// Ties are broken exactly as Caffe's CPU code does: between bottoms 0 and 1
// the later one wins (Caffe compares `a > b`), after that a bottom must be
// strictly greater than the running maximum, so the earlier one wins.
//
// PROD's gradient for bottom i is the product of the other bottoms times the
// top diff (stable_prod_grad, the default), or Caffe's quicker top / bottom_i
// times the top diff, which is NaN/inf where bottom_i is 0.
#include <algorithm>
#include <memory>
#include <string>

#include "core/pointwise_kernel.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

namespace {
using namespace pointwise;

// The forward of `n` bottoms x0 .. x<n-1>, in one launch: y = c0 * x0 + c1 *
// x1 + ... (SUM), x0 * x1 * ... (PROD), or the maximum with the winning
// bottom's index in `mask` (MAX).
std::unique_ptr<PointwiseKernel> ForwardKernel(caffe::EltwiseParameter_EltwiseOp op, int n) {
  std::vector<Arg> args;
  for (int i = 0; i < n; ++i) args.push_back(In("x" + std::to_string(i)));
  args.push_back(Out("y"));
  std::string body, name;
  switch (op) {
    case caffe::EltwiseParameter_EltwiseOp_SUM:
      // With `relu` set, clamped for a fused ReLU (as ReLU's forward: 0 * s
      // where s is not positive).
      name = "eltwise_sum";
      body = "const real s = c0 * x0";
      for (int i = 0; i < n; ++i) args.push_back(Scalar("c" + std::to_string(i)));
      args.push_back(Scalar("relu"));
      for (int i = 1; i < n; ++i) body += " + c" + std::to_string(i) + " * x" + std::to_string(i);
      body += ";\ny = relu == 0.f || s > 0.f ? s : 0.f * s;";
      break;
    case caffe::EltwiseParameter_EltwiseOp_PROD:
      name = "eltwise_prod";
      body = "y = x0";
      for (int i = 1; i < n; ++i) body += " * x" + std::to_string(i);
      body += ";";
      break;
    case caffe::EltwiseParameter_EltwiseOp_MAX:
      // As Caffe: bottom 0 beats bottom 1 only when strictly greater; a
      // later bottom must be strictly greater than the running maximum.
      name = "eltwise_max";
      args.push_back(Out("mask"));
      body = "mask = x0 > x1 ? (real)0.f : (real)1.f;\ny = x0 > x1 ? x0 : x1;\n";
      for (int i = 2; i < n; ++i) {
        const std::string x = "x" + std::to_string(i);
        body += "mask = " + x + " > y ? (real)" + std::to_string(i) + ".f : mask;\n";
        body += "y = " + x + " > y ? " + x + " : y;\n";
      }
      break;
    default:
      DLC_FAIL("Eltwise: unknown operation " << op);
  }
  return std::make_unique<PointwiseKernel>(name + std::to_string(n), args, body);
}

// PROD's gradient for one bottom: dy times the other `n` bottoms.
std::unique_ptr<PointwiseKernel> ProdBackwardKernel(int n) {
  std::vector<Arg> args = {In("dy")};
  std::string body = "dx = dy";
  for (int i = 0; i < n; ++i) {
    args.push_back(In("o" + std::to_string(i)));
    body += " * o" + std::to_string(i);
  }
  args.push_back(Out("dx"));
  return std::make_unique<PointwiseKernel>("eltwise_prod_backward" + std::to_string(n), args,
                                           body + ";");
}

// PROD gradient without stable_prod_grad: dx = y / x * dy (NaN or inf where
// x is 0, as in Caffe).
const PointwiseKernel kProdQuotientBackward("eltwise_prod_backward_quotient",
                                            {In("y"), In("x"), In("dy"), Out("dx")},
                                            "dx = y / x * dy;");
// SUM: dx = c * dy, a scaled copy (an axpby with b = 0 would turn a NaN in
// dx into NaN in the result).
const PointwiseKernel kScaledCopy("eltwise_scaled_copy", {In("dy"), Out("dx"), Scalar("c")},
                                  "dx = c * dy;");
// MAX: dx = dy where bottom `which` gave the maximum, else 0.
const PointwiseKernel kMaxBackward("eltwise_max_backward",
                                   {In("dy"), In("mask"), Out("dx"), Scalar("which")},
                                   "dx = mask == which ? dy : (real)0.f;");
}  // namespace

class EltwiseLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Eltwise"; }
  // Computes in float, reading and writing any storage type.
  bool SupportsStorage(StorageType) const override { return true; }
  int MinBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // ResNet's residual sums are followed by an in-place ReLU.
  unsigned EpilogueSupport() const override {
    return op_ == caffe::EltwiseParameter_EltwiseOp_SUM ? unsigned(LayerEpilogue::kRelu) : 0u;
  }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::EltwiseParameter& p = param_.eltwise_param();
    op_ = p.operation();
    DLC_REQUIRE(p.coeff_size() == 0 || p.coeff_size() == (int)bottom.size(),
                Where() << "takes one coeff per bottom blob: " << p.coeff_size()
                        << " coeff(s) for " << bottom.size() << " bottoms");
    DLC_REQUIRE(op_ == caffe::EltwiseParameter_EltwiseOp_SUM || p.coeff_size() == 0,
                Where() << "coeff is only for the SUM operation");
    coeffs_.assign(bottom.size(), 1.f);
    for (int i = 0; i < p.coeff_size(); ++i) coeffs_[i] = p.coeff(i);
    stable_prod_grad_ = p.stable_prod_grad();
    const int n = static_cast<int>(bottom.size());
    forward_ = ForwardKernel(op_, n);
    if (op_ == caffe::EltwiseParameter_EltwiseOp_PROD) prod_backward_ = ProdBackwardKernel(n - 1);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (size_t i = 1; i < bottom.size(); ++i)
      DLC_REQUIRE(bottom[i]->shape() == bottom[0]->shape(),
                  Where() << "all bottoms must have the same shape: bottom 0 is "
                          << bottom[0]->shape_string() << ", bottom " << i << " is "
                          << bottom[i]->shape_string());
    top[0]->ReshapeLike(*bottom[0]);
    if (op_ == caffe::EltwiseParameter_EltwiseOp_MAX) {
      const size_t bytes = std::max(top[0]->count(), 1) * sizeof(float);
      if (!max_index_ || max_index_->bytes() < bytes) max_index_ = ctx_->Allocate(bytes);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    std::vector<BufferArg> buffers;
    for (Blob* b : bottom) buffers.push_back(Data(*b));
    buffers.push_back(Data(*top[0]));
    if (op_ == caffe::EltwiseParameter_EltwiseOp_MAX) buffers.push_back(max_index_->mem());
    std::vector<ScalarArg> scalars;
    if (op_ == caffe::EltwiseParameter_EltwiseOp_SUM) {
      for (float c : coeffs_) scalars.push_back(c);
      scalars.push_back(epilogue_.relu ? 1.f : 0.f);
    }
    forward_->Launch(*ctx_, top[0]->count(), buffers, scalars, {}, KernelShapeOf(choices_));
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const int n = top[0]->count();
    const BufferArg dy = Diff(*top[0]);
    for (size_t i = 0; i < bottom.size(); ++i) {
      if (!propagate_down[i]) continue;
      const BufferArg dx = Diff(*bottom[i]);
      switch (op_) {
        case caffe::EltwiseParameter_EltwiseOp_PROD:
          if (stable_prod_grad_) {
            std::vector<BufferArg> buffers = {dy};
            for (size_t j = 0; j < bottom.size(); ++j)
              if (j != i) buffers.push_back(Data(*bottom[j]));
            buffers.push_back(dx);
            prod_backward_->Launch(*ctx_, n, buffers, {}, {}, KernelShapeOf(choices_));
          } else {
            kProdQuotientBackward.Launch(*ctx_, n, {Data(*top[0]), Data(*bottom[i]), dy, dx}, {},
                                         {}, KernelShapeOf(choices_));
          }
          break;
        case caffe::EltwiseParameter_EltwiseOp_SUM:
          if (coeffs_[i] == 1.f) {
            ctx_->Copy(dy.mem, 0, dx.mem, 0, static_cast<size_t>(n) * bottom[i]->element_bytes());
          } else {
            kScaledCopy.Launch(*ctx_, n, {dy, dx}, {coeffs_[i]}, {}, KernelShapeOf(choices_));
          }
          break;
        case caffe::EltwiseParameter_EltwiseOp_MAX:
          kMaxBackward.Launch(*ctx_, n, {dy, max_index_->mem(), dx}, {static_cast<float>(i)}, {},
                              KernelShapeOf(choices_));
          break;
        default:
          DLC_FAIL(Where() << "unknown operation " << op_);
      }
    }
  }

 private:
  caffe::EltwiseParameter_EltwiseOp op_ = caffe::EltwiseParameter_EltwiseOp_SUM;
  std::vector<float> coeffs_;
  bool stable_prod_grad_ = true;
  std::unique_ptr<PointwiseKernel> forward_;        // for this many bottoms
  std::unique_ptr<PointwiseKernel> prod_backward_;  // PROD: dy times the other bottoms
  BufferPtr max_index_;  // MAX: per element, the index of the winning bottom (a float)
};

REGISTER_LAYER_CLASS(Eltwise);
REGISTER_LAYER_TRAITS(Eltwise, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
