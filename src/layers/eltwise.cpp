// Eltwise (Caffe "Eltwise"): element-wise PROD, SUM (optionally weighted by
// one coeff per bottom) or MAX of two or more bottoms of the same shape.
//
// MAX keeps, per element, the index of the bottom that won (for backward).
// Ties are broken exactly as Caffe's CPU code does: between bottoms 0 and 1
// the later one wins (Caffe compares `a > b`), after that a bottom must be
// strictly greater than the running maximum, so the earlier one wins.
//
// PROD's gradient for bottom i is the product of the other bottoms times the
// top diff (stable_prod_grad, the default), or Caffe's quicker top / bottom_i
// times the top diff, which is NaN/inf where bottom_i is 0.
#include <algorithm>

#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class EltwiseLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Eltwise"; }
  int MinBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }

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
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (size_t i = 1; i < bottom.size(); ++i)
      DLC_REQUIRE(bottom[i]->shape() == bottom[0]->shape(),
                  Where() << "all bottoms must have the same shape: bottom 0 is "
                          << bottom[0]->shape_string() << ", bottom " << i << " is "
                          << bottom[i]->shape_string());
    top[0]->ReshapeLike(*bottom[0]);
    if (op_ == caffe::EltwiseParameter_EltwiseOp_MAX) {
      const size_t bytes = std::max(top[0]->count(), 1) * sizeof(cl_int);
      if (!max_index_ || max_index_->bytes() < bytes) max_index_ = ctx_->Allocate(bytes);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    cl_mem out = top[0]->data();
    switch (op_) {
      case caffe::EltwiseParameter_EltwiseOp_PROD: {
        cl_kernel mul = ctx_->Kernel("eltwise.cl", "", "eltwise_mul");
        ctx_->Launch1D(mul, n, n, bottom[0]->data(), bottom[1]->data(), out);
        for (size_t i = 2; i < bottom.size(); ++i)
          ctx_->Launch1D(mul, n, n, out, bottom[i]->data(), out);
        break;
      }
      case caffe::EltwiseParameter_EltwiseOp_SUM:
        ctx_->Launch1D(ctx_->Kernel("eltwise.cl", "", "eltwise_sum2"), n, n, coeffs_[0],
                       bottom[0]->data(), coeffs_[1], bottom[1]->data(), out);
        for (size_t i = 2; i < bottom.size(); ++i)
          Axpy(*ctx_, n, coeffs_[i], bottom[i]->data(), 0, out, 0);
        break;
      case caffe::EltwiseParameter_EltwiseOp_MAX: {
        ctx_->Launch1D(ctx_->Kernel("eltwise.cl", "", "eltwise_max_first2"), n, n,
                       bottom[0]->data(), bottom[1]->data(), out, max_index_->mem());
        cl_kernel next = ctx_->Kernel("eltwise.cl", "", "eltwise_max_next");
        for (size_t i = 2; i < bottom.size(); ++i)
          ctx_->Launch1D(next, n, n, bottom[i]->data(), static_cast<int>(i), out,
                         max_index_->mem());
        break;
      }
      default:
        DLC_FAIL(Where() << "unknown operation " << op_);
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    const int n = top[0]->count();
    cl_mem dy = top[0]->diff();
    for (size_t i = 0; i < bottom.size(); ++i) {
      if (!propagate_down[i]) continue;
      cl_mem dx = bottom[i]->diff();
      switch (op_) {
        case caffe::EltwiseParameter_EltwiseOp_PROD:
          if (stable_prod_grad_) {
            // dx = (product of the other bottoms) * dy, built in dx.
            cl_kernel mul = ctx_->Kernel("eltwise.cl", "", "eltwise_mul");
            bool started = false;
            for (size_t j = 0; j < bottom.size(); ++j) {
              if (j == i) continue;
              ctx_->Launch1D(mul, n, n, started ? dx : dy, bottom[j]->data(), dx);
              started = true;
            }
          } else {
            ctx_->Launch1D(ctx_->Kernel("eltwise.cl", "", "eltwise_prod_backward_quotient"),
                           n, n, top[0]->data(), bottom[i]->data(), dy, dx);
          }
          break;
        case caffe::EltwiseParameter_EltwiseOp_SUM:
          if (coeffs_[i] == 1.f) {
            CopyFloats(*ctx_, n, dy, 0, dx, 0);
          } else {
            ctx_->Launch1D(ctx_->Kernel("eltwise.cl", "", "eltwise_scale_copy"), n, n,
                           coeffs_[i], dy, dx);
          }
          break;
        case caffe::EltwiseParameter_EltwiseOp_MAX:
          ctx_->Launch1D(ctx_->Kernel("eltwise.cl", "", "eltwise_max_backward"), n, n, dy,
                         max_index_->mem(), static_cast<int>(i), dx);
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
  BufferPtr max_index_;  // MAX: per element, the index of the winning bottom (int)
};

REGISTER_LAYER_CLASS(Eltwise);

}  // namespace dlcaffe
