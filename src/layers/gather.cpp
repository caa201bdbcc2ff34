// Gather (dlcaffe; ONNX Gather, numpy's take): the top is bottom 0 with
// `axis` replaced by the shape of bottom 1's indices (floats, exact below
// 2^24; negative ones count from the end of the axis). The indices are not
// read on the host: one out of range gives NaN top elements. The gradient
// of a data element sums the top diffs that picked it.
#include <vector>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class GatherLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Gather"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& x = *bottom[0];
    const int rank = x.num_axes();
    const int axis = param_.gather_param().axis();
    DLC_REQUIRE(rank >= 1 && axis >= -rank && axis < rank,
                Where() << "axis " << axis << " is out of range for data of shape "
                        << x.shape_string());
    axis_ = axis < 0 ? axis + rank : axis;
    std::vector<int> shape(x.shape().begin(), x.shape().begin() + axis_);
    shape.insert(shape.end(), bottom[1]->shape().begin(), bottom[1]->shape().end());
    shape.insert(shape.end(), x.shape().begin() + axis_ + 1, x.shape().end());
    top[0]->Reshape(shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int count = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("gather.cl", "", "gather_forward"), count, count,
                   bottom[0]->shape(axis_), bottom[1]->count(), bottom[0]->count(axis_ + 1),
                   bottom[1]->data(), bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the indices");
    if (!propagate_down[0]) return;
    const int count = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("gather.cl", "", "gather_backward"), count, count,
                   bottom[0]->shape(axis_), bottom[1]->count(), bottom[0]->count(axis_ + 1),
                   bottom[1]->data(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  int axis_ = 0;
};

REGISTER_LAYER_CLASS(Gather);

}  // namespace dlcaffe
