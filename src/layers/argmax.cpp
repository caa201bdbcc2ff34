// ArgMax (Caffe "ArgMax"): the indices (and with out_max_val the values) of
// the top_k largest elements, either along `axis` or, without an axis, over
// each item's flattened elements (top N x 1 x top_k, or N x 2 x top_k with the
// indices then the values). Ties go to the larger index, as Caffe's sort does.
// It has no gradient.
#include <algorithm>
#include <cstdint>
#include <string>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ArgMaxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ArgMax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ArgMaxParameter& p = param_.argmax_param();
    DLC_REQUIRE(p.top_k() >= 1 && p.top_k() <= INT32_MAX,
                Where() << "top_k must be at least 1, got " << p.top_k());
    top_k_ = static_cast<int>(p.top_k());
    out_max_val_ = p.out_max_val();
    has_axis_ = p.has_axis();
    const int mode = !out_max_val_ ? 0 : has_axis_ ? 1 : 2;
    options_ = "-DOUT_MODE=" + std::to_string(mode);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& in = *bottom[0];
    std::vector<int> shape;
    if (has_axis_) {
      const int axis = param_.argmax_param().axis();
      DLC_REQUIRE(axis >= -in.num_axes() && axis < in.num_axes(),
                  Where() << "axis " << axis << " is out of range for a bottom of shape "
                          << in.shape_string());
      axis_ = axis < 0 ? axis + in.num_axes() : axis;
      dim_ = in.shape(axis_);
      stride_ = in.count(axis_ + 1);
      DLC_REQUIRE(top_k_ <= dim_, Where() << "top_k " << top_k_ << " exceeds the size "
                                          << dim_ << " of axis " << axis_ << " of the bottom "
                                          << in.shape_string());
      shape = in.shape();
      shape[axis_] = top_k_;
    } else {
      DLC_REQUIRE(in.num_axes() >= 1,
                  Where() << "needs a bottom with a batch axis, got shape " << in.shape_string());
      dim_ = in.count(1);
      stride_ = 1;
      DLC_REQUIRE(top_k_ <= dim_, Where() << "top_k " << top_k_
                                          << " exceeds the number of elements " << dim_
                                          << " per item of the bottom " << in.shape_string());
      shape.assign(std::max(in.num_axes(), 3), 1);
      shape[0] = in.shape(0);
      shape[1] = out_max_val_ ? 2 : 1;
      shape[2] = top_k_;
    }
    top[0]->Reshape(shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int groups = dim_ > 0 ? bottom[0]->count() / dim_ : 0;
    ctx_->Launch1D(ctx_->Kernel("argmax.cl", options_, "argmax_forward"), groups, groups,
                   dim_, stride_, top_k_, bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[0], Where() << "ArgMax has no gradient");
  }

 private:
  int top_k_ = 1;
  bool out_max_val_ = false;
  bool has_axis_ = false;
  std::string options_;  // kernel variant: -DOUT_MODE=
  int axis_ = 0;
  int dim_ = 0;     // elements compared per group
  int stride_ = 1;  // distance between them
};

REGISTER_LAYER_CLASS(ArgMax);

}  // namespace dlcaffe
