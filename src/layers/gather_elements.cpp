// GatherElements (ONNX's GatherElements, torch.gather): top[c] =
// bottom0[c with c[axis] = bottom1[c]], the top taking the shape of the
// indices (bottom 1, float-valued like Caffe's other index blobs), whose
// axes are at most the data's off `axis`. BERT's embeddings pick token types
// this way. The gradient of a data element is the sum of the top diffs that
// picked it: a gather over the axis (backward needs no atomics). Indices
// are not read on the host (that would stall the queue): one out of range
// gives a NaN top element and no gradient.
#include "dlcaffe/layer_registry.hpp"
#include "layers/elements_geometry.hpp"

namespace dlcaffe {

class GatherElementsLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "GatherElements"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    axis_ = geometry_.Set(*ctx_, *bottom[0], *bottom[1], param_.gather_elements_param().axis(),
                          Where(), "indices", 1);
    top[0]->Reshape(bottom[1]->shape());
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    if (n == 0) return;
    ctx_->Launch1D(ctx_->Kernel("gather_elements.cl", "", "gather_elements_forward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_.buffer(), bottom[1]->data(),
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the indices");
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    if (n == 0) return;
    ctx_->Launch1D(ctx_->Kernel("gather_elements.cl", "", "gather_elements_backward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_.buffer(), bottom[1]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }

 private:
  int axis_ = 0;
  ElementsGeometry geometry_;
};

REGISTER_LAYER_CLASS(GatherElements);

}  // namespace dlcaffe
