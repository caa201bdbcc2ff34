// Concat (Caffe "Concat"): joins the bottoms along one axis (concat_param.axis,
// default 1, or the legacy concat_dim); all other axes must match. With a
// single bottom the top is a view that shares its data and diff.
#include <cstdint>

#include "core/blob_copy.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class ConcatLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Concat"; }
  // Values are moved as they are stored.
  bool SupportsStorage(StorageType) const override { return true; }
  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ConcatParameter& p = param_.concat_param();
    DLC_REQUIRE(!(p.has_axis() && p.has_concat_dim()),
                Where() << "give either axis or concat_dim, not both");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ConcatParameter& p = param_.concat_param();
    const Blob& first = *bottom[0];
    const int num_axes = first.num_axes();
    if (p.has_concat_dim()) {
      // concat_dim is unsigned in the schema: values above INT_MAX are errors too.
      DLC_REQUIRE(p.concat_dim() < static_cast<uint32_t>(num_axes),
                  Where() << "concat_dim " << p.concat_dim()
                          << " is out of range for a bottom of shape " << first.shape_string());
      axis_ = static_cast<int>(p.concat_dim());
    } else {
      DLC_REQUIRE(p.axis() >= -num_axes && p.axis() < num_axes,
                  Where() << "axis " << p.axis() << " is out of range for a bottom of shape "
                          << first.shape_string());
      axis_ = p.axis() < 0 ? p.axis() + num_axes : p.axis();
    }
    std::vector<int> shape = first.shape();
    int64_t axis_total = first.shape(axis_);
    for (size_t i = 1; i < bottom.size(); ++i) {
      const Blob& b = *bottom[i];
      bool fits = b.num_axes() == num_axes;
      for (int j = 0; fits && j < num_axes; ++j)
        fits = j == axis_ || b.shape(j) == first.shape(j);
      DLC_REQUIRE(fits, Where() << "bottom " << i << " of shape " << b.shape_string()
                                << " does not fit bottom 0 of shape " << first.shape_string()
                                << ": all axes but the concatenation axis " << axis_
                                << " must match");
      axis_total += b.shape(axis_);
    }
    DLC_REQUIRE(axis_total <= INT32_MAX,
                Where() << "the concatenated axis " << axis_ << " would be " << axis_total
                        << " long");
    shape[axis_] = static_cast<int>(axis_total);
    top[0]->Reshape(shape);
    if (bottom.size() == 1) {
      top[0]->ShareData(first);
      top[0]->ShareDiff(first);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    // One bottom: the top shares its buffers (copies only if since replaced).
    if (bottom.size() == 1) {
      CopyBlobValues(*ctx_, *bottom[0], bottom[0]->data(), top[0]->data());
      return;
    }
    cl_kernel kernel = ctx_->Kernel(
        "concat.cl", StorageOption("DATA_TYPE", bottom[0]->storage_type()), "part_to_whole");
    const int whole_axis = top[0]->shape(axis_), inner = top[0]->count(axis_ + 1);
    int offset = 0;
    for (Blob* b : bottom) {
      const int n = b->count(), part_axis = b->shape(axis_);
      ctx_->Launch1D(kernel, n, n, part_axis, whole_axis, offset, inner, b->data(),
                     top[0]->data());
      offset += part_axis;
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (bottom.size() == 1) {
      if (propagate_down[0])
        CopyBlobValues(*ctx_, *bottom[0], top[0]->diff(), bottom[0]->diff());
      return;
    }
    cl_kernel kernel = ctx_->Kernel(
        "concat.cl", StorageOption("DATA_TYPE", bottom[0]->storage_type()), "whole_to_part");
    const int whole_axis = top[0]->shape(axis_), inner = top[0]->count(axis_ + 1);
    int offset = 0;
    for (size_t i = 0; i < bottom.size(); ++i) {
      const int n = bottom[i]->count(), part_axis = bottom[i]->shape(axis_);
      if (propagate_down[i])
        ctx_->Launch1D(kernel, n, n, part_axis, whole_axis, offset, inner, top[0]->diff(),
                       bottom[i]->diff());
      offset += part_axis;
    }
  }

 private:
  int axis_ = 1;  // the canonical concatenation axis
};

REGISTER_LAYER_CLASS(Concat);
REGISTER_LAYER_TRAITS(Concat, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
