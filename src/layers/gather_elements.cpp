// GatherElements (ONNX's GatherElements, torch.gather): top[c] =
// bottom0[c with c[axis] = bottom1[c]], the top taking the shape of the
// indices (bottom 1, float-valued like Caffe's other index blobs), whose
// axes are at most the data's off `axis`. BERT's embeddings pick token types
// this way. The gradient of a data element is the sum of the top diffs that
// picked it: a gather over the axis (backward needs no atomics). Indices
// are not read on the host (that would stall the queue): one out of range
// gives a NaN top element and no gradient.
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class GatherElementsLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "GatherElements"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& data = *bottom[0];
    const Blob& index = *bottom[1];
    const int rank = data.num_axes();
    DLC_REQUIRE(rank >= 1 && index.num_axes() == rank,
                Where() << "the indices (bottom 1, shape " << index.shape_string()
                        << ") must have as many axes as the data (bottom 0, shape "
                        << data.shape_string() << ")");
    const int axis = param_.gather_elements_param().axis();
    DLC_REQUIRE(axis >= -rank && axis < rank,
                Where() << "axis " << axis << " is out of range for data of shape "
                        << data.shape_string());
    axis_ = axis < 0 ? axis + rank : axis;
    for (int d = 0; d < rank; ++d)
      DLC_REQUIRE(d == axis_ || index.shape(d) <= data.shape(d),
                  Where() << "the indices' axis " << d << " (" << index.shape(d)
                          << ") exceeds the data's (" << data.shape(d) << "; shapes "
                          << index.shape_string() << " and " << data.shape_string() << ")");
    top[0]->Reshape(index.shape());
    std::vector<int> geometry = index.shape();
    geometry.insert(geometry.end(), data.shape().begin(), data.shape().end());
    if (geometry != geometry_values_) {
      geometry_values_ = geometry;
      geometry_ = ctx_->Allocate(geometry.size() * sizeof(int));
      ctx_->Write(geometry_->mem(), 0, geometry.size() * sizeof(int), geometry.data());
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    if (n == 0) return;
    ctx_->Launch1D(ctx_->Kernel("gather_elements.cl", "", "gather_elements_forward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_->mem(), bottom[1]->data(),
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[1], Where() << "cannot backpropagate to the indices");
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    if (n == 0) return;
    ctx_->Launch1D(ctx_->Kernel("gather_elements.cl", "", "gather_elements_backward"), n, n,
                   bottom[0]->num_axes(), axis_, geometry_->mem(), bottom[1]->data(),
                   top[0]->diff(), bottom[0]->diff());
  }

 private:
  int axis_ = 0;
  std::vector<int> geometry_values_;  // the top's extents, then the data's
  BufferPtr geometry_;
};

REGISTER_LAYER_CLASS(GatherElements);

}  // namespace dlcaffe
