// RoiAlign (dlcaffe; ONNX RoiAlign in average mode, torchvision.ops.
// roi_align, which Faster R-CNN's MultiScaleRoIAlign exports once per
// feature level): bottom 0 features N x C x H x W, bottom 1 regions R x 4
// (x1, y1, x2, y2 in input pixels), bottom 2 each region's image (R, as
// floats); top R x C x output_height x output_width, each bin the average
// of its bilinear samples as torchvision computes them
// (src/cl/roi_align.cl). R may follow the data. The regions' gradient is 0
// (as torchvision's); the features' is not implemented: a Backward asked
// for it is an error naming the layer.
#include <vector>

#include "core/exact_division.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class RoiAlignLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "RoiAlign"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>&, const std::vector<Blob*>&) override {
    const caffe::RoiAlignParameter& p = param_.roi_align_param();
    DLC_REQUIRE(p.output_height() > 0 && p.output_width() > 0,
                Where() << "output_height and output_width must be positive, got "
                        << p.output_height() << " x " << p.output_width());
    DLC_REQUIRE(p.sampling_ratio() >= 0,
                Where() << "sampling_ratio is " << p.sampling_ratio() << "; it must be at least 0");
    build_options_ = ExactDivisionOption(ctx_->info());
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &x = *bottom[0], &rois = *bottom[1], &images = *bottom[2];
    DLC_REQUIRE(x.num_axes() == 4, Where() << "the features (bottom 0) must be N x C x H x W, got "
                                           << x.shape_string());
    DLC_REQUIRE(rois.num_axes() == 2 && rois.shape(1) == 4,
                Where() << "the regions (bottom 1) must be R x 4, got " << rois.shape_string());
    DLC_REQUIRE(images.count() == rois.shape(0),
                Where() << "bottom 2 must hold one image index per region (" << rois.shape(0)
                        << "), got shape " << images.shape_string());
    const caffe::RoiAlignParameter& p = param_.roi_align_param();
    top[0]->Reshape({rois.shape(0), x.shape(1), p.output_height(), p.output_width()});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::RoiAlignParameter& p = param_.roi_align_param();
    const Blob& x = *bottom[0];
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("roi_align.cl", build_options_, "roi_align_forward"), n, n,
                   x.shape(1), x.shape(2), x.shape(3), x.shape(0), p.output_height(),
                   p.output_width(), p.spatial_scale(), p.sampling_ratio(),
                   static_cast<int>(p.half_pixel()), x.data(), bottom[1]->data(),
                   bottom[2]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down[0],
                Where() << "has no gradient for the features: RoiAlign runs for inference only");
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  std::string build_options_;  // bins as the host divides (core/exact_division.hpp)
};

REGISTER_LAYER_CLASS(RoiAlign);

}  // namespace dlcaffe
