// Slice (Caffe "Slice"): cuts the bottom along one axis (slice_param.axis,
// default 1, or the legacy slice_dim) into the tops, at the given slice_point
// positions, or into equal parts when there are none. With a single top the
// top is a view that shares the bottom's data and diff. The copies use
// Concat's block-copy kernels (src/cl/concat.cl): Slice is Concat reversed.
#include <cstdint>
#include <sstream>

#include "core/blob_copy.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class SliceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Slice"; }
  // Values are moved as they are stored.
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::SliceParameter& p = param_.slice_param();
    DLC_REQUIRE(!(p.has_axis() && p.has_slice_dim()),
                Where() << "give either axis or slice_dim, not both");
    DLC_REQUIRE(p.slice_point_size() == 0 || p.slice_point_size() == (int)top.size() - 1,
                Where() << p.slice_point_size() << " slice_point value(s) for " << top.size()
                        << " top blob(s): give one fewer than the tops, or none");
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::SliceParameter& p = param_.slice_param();
    const Blob& in = *bottom[0];
    const int num_axes = in.num_axes();
    if (p.has_slice_dim()) {
      // slice_dim is unsigned in the schema: values above INT_MAX are errors too.
      DLC_REQUIRE(p.slice_dim() < static_cast<uint32_t>(num_axes),
                  Where() << "slice_dim " << p.slice_dim()
                          << " is out of range for a bottom of shape " << in.shape_string());
      axis_ = static_cast<int>(p.slice_dim());
    } else {
      DLC_REQUIRE(p.axis() >= -num_axes && p.axis() < num_axes,
                  Where() << "axis " << p.axis() << " is out of range for a bottom of shape "
                          << in.shape_string());
      axis_ = p.axis() < 0 ? p.axis() + num_axes : p.axis();
    }
    const int axis_size = in.shape(axis_);
    const int tops = static_cast<int>(top.size());
    std::vector<int> sizes;
    if (p.slice_point_size() > 0) {
      uint32_t previous = 0;
      for (int i = 0; i < p.slice_point_size(); ++i) {
        const uint32_t point = p.slice_point(i);
        DLC_REQUIRE(point > previous && point <= static_cast<uint32_t>(axis_size),
                    Where() << "slice_point " << point << " must be greater than "
                            << previous << " and at most the size " << axis_size
                            << " of axis " << axis_ << " of the bottom "
                            << in.shape_string() << " (slice points: " << PointsText() << ")");
        sizes.push_back(static_cast<int>(point - previous));
        previous = point;
      }
      sizes.push_back(axis_size - static_cast<int>(previous));
    } else {
      DLC_REQUIRE(axis_size % tops == 0,
                  Where() << tops << " top blobs do not evenly divide axis " << axis_
                          << " of size " << axis_size << " of the bottom " << in.shape_string());
      sizes.assign(tops, axis_size / tops);
    }
    std::vector<int> shape = in.shape();
    for (int i = 0; i < tops; ++i) {
      shape[axis_] = sizes[i];
      top[i]->Reshape(shape);
    }
    if (tops == 1) {
      top[0]->ShareData(in);
      top[0]->ShareDiff(in);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    // One top: it shares the bottom's buffers (copies only if since replaced).
    if (top.size() == 1) {
      CopyBlobValues(*ctx_, *bottom[0], bottom[0]->data(), top[0]->data());
      return;
    }
    cl_kernel kernel = ctx_->Kernel(
        "concat.cl", StorageOption("DATA_TYPE", bottom[0]->storage_type()), "whole_to_part");
    const int whole_axis = bottom[0]->shape(axis_), inner = bottom[0]->count(axis_ + 1);
    int offset = 0;
    for (Blob* t : top) {
      const int n = t->count(), part_axis = t->shape(axis_);
      ctx_->Launch1D(kernel, n, n, part_axis, whole_axis, offset, inner, bottom[0]->data(),
                     t->data());
      offset += part_axis;
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    if (top.size() == 1) {
      CopyBlobValues(*ctx_, *bottom[0], top[0]->diff(), bottom[0]->diff());
      return;
    }
    cl_kernel kernel = ctx_->Kernel(
        "concat.cl", StorageOption("DATA_TYPE", bottom[0]->storage_type()), "part_to_whole");
    const int whole_axis = bottom[0]->shape(axis_), inner = bottom[0]->count(axis_ + 1);
    int offset = 0;
    for (Blob* t : top) {
      const int n = t->count(), part_axis = t->shape(axis_);
      ctx_->Launch1D(kernel, n, n, part_axis, whole_axis, offset, inner, t->diff(),
                     bottom[0]->diff());
      offset += part_axis;
    }
  }

 private:
  std::string PointsText() const {
    std::ostringstream s;
    for (int i = 0; i < param_.slice_param().slice_point_size(); ++i)
      s << (i ? " " : "") << param_.slice_param().slice_point(i);
    return s.str();
  }

  int axis_ = 1;  // the canonical slice axis
};

REGISTER_LAYER_CLASS(Slice);

}  // namespace dlcaffe
