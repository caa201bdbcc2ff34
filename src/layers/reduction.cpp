// Reduction (Caffe "Reduction"): reduces the axes [axis, end) of the bottom to
// one value each, so the top has the shape of the leading axes (a scalar for
// the default axis 0). Operations: SUM, ASUM (sum of |x|), SUMSQ (sum of
// x^2), MEAN; the result is scaled by coeff.
#include <string>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ReductionLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Reduction"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    op_ = param_.reduction_param().operation();
    // MEAN is a SUM with coeff / dim.
    options_ = "-DREDUCTION_OP=" +
               std::to_string(op_ == caffe::ReductionParameter_ReductionOp_MEAN
                                  ? int(caffe::ReductionParameter_ReductionOp_SUM)
                                  : int(op_));
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& in = *bottom[0];
    const int axis = param_.reduction_param().axis();
    DLC_REQUIRE(axis >= -in.num_axes() && axis < in.num_axes(),
                Where() << "axis " << axis << " is out of range for a bottom of shape "
                        << in.shape_string());
    axis_ = axis < 0 ? axis + in.num_axes() : axis;
    top[0]->Reshape(std::vector<int>(in.shape().begin(), in.shape().begin() + axis_));
    rows_ = in.count(0, axis_);
    dim_ = in.count(axis_);
    coeff_ = param_.reduction_param().coeff();
    if (op_ == caffe::ReductionParameter_ReductionOp_MEAN && dim_ > 0) coeff_ /= dim_;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (rows_ == 0) return;
    // Long rows: a work-group of 64 shares each row; short ones: one work-item.
    const size_t group = dim_ >= 256 ? 64 : 1;
    ctx_->Launch(ctx_->Kernel("reduction.cl", options_, "reduction_forward"),
                 NDRange(rows_ * group), NDRange(group), dim_, coeff_, bottom[0]->data(),
                 top[0]->data(), LocalMemory{group * sizeof(float)});
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("reduction.cl", options_, "reduction_backward"), n, n, dim_,
                   coeff_, bottom[0]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  caffe::ReductionParameter_ReductionOp op_ = caffe::ReductionParameter_ReductionOp_SUM;
  std::string options_;  // kernel variant: -DREDUCTION_OP=
  int axis_ = 0;
  int rows_ = 0;         // number of outputs: count of the axes before axis_
  int dim_ = 0;          // elements reduced into each output
  float coeff_ = 1.f;    // coeff, divided by dim_ for MEAN
};

REGISTER_LAYER_CLASS(Reduction);

}  // namespace dlcaffe
