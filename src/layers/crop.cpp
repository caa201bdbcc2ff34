// Crop (Caffe "Crop"): crops bottom[0] to the shape of bottom[1] on the axes
// from crop_param.axis (default 2) on, starting at crop_param.offset: none
// (0), one for every cropped axis, or one per cropped axis. Axes before
// `axis` keep bottom[0]'s size. Backward writes the top diff into the crop
// window of bottom[0]'s diff and zeros elsewhere; bottom[1] only gives the
// shape: its gradient is zero.
#include <algorithm>
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class CropLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Crop"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::CropParameter& p = param_.crop_param();
    const Blob& in = *bottom[0];
    const Blob& like = *bottom[1];
    const int num_axes = in.num_axes();
    DLC_REQUIRE(like.num_axes() == num_axes,
                Where() << "bottom 0 " << in.shape_string() << " and bottom 1 "
                        << like.shape_string() << " must have the same number of axes");
    DLC_REQUIRE(p.axis() >= -num_axes && p.axis() < num_axes,
                Where() << "axis " << p.axis() << " is out of range for a bottom of shape "
                        << in.shape_string());
    const int start = p.axis() < 0 ? p.axis() + num_axes : p.axis();
    DLC_REQUIRE(p.offset_size() <= 1 || start + p.offset_size() == num_axes,
                Where() << p.offset_size() << " offsets for the " << num_axes - start
                        << " axes cropped from axis " << start << " of " << in.shape_string()
                        << ": give one offset, or one per cropped axis");
    std::vector<int> shape(num_axes), strides(num_axes), offsets(num_axes, 0);
    for (int d = 0; d < num_axes; ++d) {
      shape[d] = in.shape(d);
      strides[d] = in.count(d + 1);
      if (d < start) continue;
      shape[d] = like.shape(d);
      if (p.offset_size() == 1) offsets[d] = static_cast<int>(p.offset(0));
      if (p.offset_size() > 1) offsets[d] = static_cast<int>(p.offset(d - start));
      DLC_REQUIRE(offsets[d] >= 0 && in.shape(d) - offsets[d] >= like.shape(d),
                  Where() << "axis " << d << ": offset " << offsets[d] << " plus size "
                          << like.shape(d) << " (of bottom 1 " << like.shape_string()
                          << ") passes the size " << in.shape(d) << " of bottom 0 "
                          << in.shape_string());
    }
    top[0]->Reshape(shape);
    num_axes_ = num_axes;
    std::vector<int> layout = shape;
    layout.insert(layout.end(), strides.begin(), strides.end());
    layout.insert(layout.end(), offsets.begin(), offsets.end());
    // Net runs Reshape every pass: write (a blocking transfer) only on change.
    if (layout_ && layout == written_layout_) return;
    const size_t bytes = std::max<size_t>(layout.size(), 1) * sizeof(int);
    if (!layout_ || layout_->bytes() < bytes) layout_ = ctx_->Allocate(bytes);
    if (!layout.empty()) ctx_->Write(layout_->mem(), 0, layout.size() * sizeof(int), layout.data());
    written_layout_ = layout;
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("crop.cl", "", "crop_forward"), n, n, num_axes_,
                   layout_->mem(), bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients({false, propagate_down.size() > 1 && propagate_down[1]}, bottom);
    if (!propagate_down[0]) return;
    SetFloats(*ctx_, bottom[0]->count(), 0.f, bottom[0]->diff(), 0);
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("crop.cl", "", "crop_backward"), n, n, num_axes_,
                   layout_->mem(), top[0]->diff(), bottom[0]->diff());
  }

 private:
  int num_axes_ = 0;
  BufferPtr layout_;  // top shape, bottom strides, offsets (crop.cl)
  std::vector<int> written_layout_;  // what layout_ holds
};

REGISTER_LAYER_CLASS(Crop);

}  // namespace dlcaffe
