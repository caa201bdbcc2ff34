// FullLike (dlcaffe; torch.full_like, ONNX ConstantOfShape of a run-time
// Shape): every element full_like_param.value, in the bottom's shape or in
// the given dims, whose -1s take sizes of the bottom's axes (Faster
// R-CNN's pooled regions: region count x C x 7 x 7). The bottom's values
// are not read; no gradient reaches it.
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class FullLikeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "FullLike"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::FullLikeParameter& p = param_.full_like_param();
    if (p.dim_size() == 0) return top[0]->Reshape(bottom[0]->shape());
    std::vector<int> shape;
    int next = 0;
    for (int d : p.dim()) {
      if (d >= 0) {
        shape.push_back(d);
        continue;
      }
      DLC_REQUIRE(d == -1 && next < p.bottom_axis_size(),
                  Where() << "each dim must be at least 0, or -1 with a bottom_axis for it");
      const int axis = p.bottom_axis(next++);
      DLC_REQUIRE(axis >= 0 && axis < bottom[0]->num_axes(),
                  Where() << "bottom_axis " << axis << " is out of range for the bottom "
                          << bottom[0]->shape_string());
      shape.push_back(bottom[0]->shape(axis));
    }
    top[0]->Reshape(shape);
  }

  void Forward(const std::vector<Blob*>&, const std::vector<Blob*>& top) override {
    ctx_->Fill(top[0]->data(), 0, top[0]->count(), param_.full_like_param().value());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }
};

REGISTER_LAYER_CLASS(FullLike);

}  // namespace dlcaffe
