// ScatterElements (dlcaffe; ONNX ScatterElements without reduction,
// torch.Tensor.scatter): the top is bottom 0 (the data) with, for each
// element of bottom 2 (the updates), the element at its coordinates but
// `axis` replaced by bottom 1's index there overwritten by it. The indices
// have the updates' shape, their other axes at most the data's, and the
// layer takes gather_elements_param (the axis means the same: ScatterElements
// undoes GatherElements). Faster R-CNN puts each feature level's pooled
// regions back in order this way. Indices should be distinct (ONNX leaves
// duplicates undefined: one of them wins); one out of range writes nothing.
// Gradients: the data's is the top's but 0 where an update went; an
// update's is the top's at its target.
#include <vector>

#include "dlcaffe/layer_registry.hpp"
#include "layers/elements_geometry.hpp"

namespace dlcaffe {

class ScatterElementsLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ScatterElements"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[1]->shape() == bottom[2]->shape(),
                Where() << "the indices (bottom 1, shape " << bottom[1]->shape_string()
                        << ") must have the updates' shape (bottom 2, " << bottom[2]->shape_string()
                        << ")");
    axis_ = geometry_.Set(*ctx_, *bottom[0], *bottom[2], param_.gather_elements_param().axis(),
                          Where(), "updates", 2);
    top[0]->Reshape(bottom[0]->shape());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place");
    if (top[0]->count() > 0)
      ctx_->Copy(bottom[0]->data(), 0, top[0]->data(), 0, top[0]->count() * sizeof(float));
    const int n = bottom[2]->count();
    ctx_->Launch1D(ctx_->Kernel("scatter_elements.cl", "", "scatter_elements_forward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_.buffer(), bottom[1]->data(),
                   bottom[2]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the indices");
    if (propagate_down[0] && top[0]->count() > 0)
      ctx_->Copy(top[0]->diff(), 0, bottom[0]->diff(), 0, top[0]->count() * sizeof(float));
    const int n = bottom[2]->count();
    if (!propagate_down[0] && !propagate_down[2]) return;
    ctx_->Launch1D(ctx_->Kernel("scatter_elements.cl", "", "scatter_elements_backward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_.buffer(), bottom[1]->data(),
                   top[0]->diff(), propagate_down[2] ? bottom[2]->diff() : cl_mem(nullptr),
                   static_cast<int>(propagate_down[0]),
                   propagate_down[0] ? bottom[0]->diff() : cl_mem(nullptr));
  }

 private:
  int axis_ = 0;
  ElementsGeometry geometry_;
};

REGISTER_LAYER_CLASS(ScatterElements);

}  // namespace dlcaffe
