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

#include "core/grow_buffer.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ScatterElementsLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ScatterElements"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &data = *bottom[0], &index = *bottom[1], &updates = *bottom[2];
    const int rank = data.num_axes();
    DLC_REQUIRE(index.shape() == updates.shape(),
                Where() << "the indices (bottom 1, shape " << index.shape_string()
                        << ") must have the updates' shape (bottom 2, " << updates.shape_string()
                        << ")");
    DLC_REQUIRE(rank >= 1 && updates.num_axes() == rank,
                Where() << "the updates (shape " << updates.shape_string()
                        << ") must have as many axes as the data (" << data.shape_string() << ")");
    const int axis = param_.gather_elements_param().axis();
    DLC_REQUIRE(axis >= -rank && axis < rank,
                Where() << "axis " << axis << " is out of range for data of shape "
                        << data.shape_string());
    axis_ = axis < 0 ? axis + rank : axis;
    for (int d = 0; d < rank; ++d)
      DLC_REQUIRE(d == axis_ || updates.shape(d) <= data.shape(d),
                  Where() << "the updates' axis " << d << " (" << updates.shape(d)
                          << ") exceeds the data's (shapes " << updates.shape_string() << " and "
                          << data.shape_string() << ")");
    top[0]->Reshape(data.shape());
    std::vector<int> geometry = updates.shape();
    geometry.insert(geometry.end(), data.shape().begin(), data.shape().end());
    if (geometry != geometry_values_) {
      geometry_values_ = geometry;
      GrowBuffer(*ctx_, &geometry_, geometry.size() * sizeof(int));
      ctx_->Write(geometry_->mem(), 0, geometry.size() * sizeof(int), geometry.data());
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place");
    if (top[0]->count() > 0)
      ctx_->Copy(bottom[0]->data(), 0, top[0]->data(), 0, top[0]->count() * sizeof(float));
    const int n = bottom[2]->count();
    ctx_->Launch1D(ctx_->Kernel("scatter_elements.cl", "", "scatter_elements_forward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_->mem(), bottom[1]->data(),
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
                   bottom[0]->num_axes(), axis_, geometry_->mem(), bottom[1]->data(),
                   top[0]->diff(), propagate_down[2] ? bottom[2]->diff() : cl_mem(nullptr),
                   static_cast<int>(propagate_down[0]),
                   propagate_down[0] ? bottom[0]->diff() : cl_mem(nullptr));
  }

 private:
  int axis_ = 0;
  std::vector<int> geometry_values_;  // the updates' extents, then the data's
  BufferPtr geometry_;
};

REGISTER_LAYER_CLASS(ScatterElements);

}  // namespace dlcaffe
