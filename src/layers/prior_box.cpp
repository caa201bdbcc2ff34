// PriorBox (Caffe SSD "PriorBox", prior_box_param): the default boxes of a
// feature map (caffe.proto's PriorBoxParameter says which, in what order).
// Bottoms: the feature map (its H x W) and the image (its size, unless
// img_size/img_h/img_w give it). The boxes depend on the shapes only: the
// widths and heights of a cell's priors are worked out once at setup (in
// float, as SSD's Caffe does), the corners on the device.
#include <cmath>
#include <string>
#include <vector>

#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class PriorBoxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "PriorBox"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::PriorBoxParameter& p = param_.prior_box_param();
    DLC_REQUIRE(p.min_size_size() > 0, Where() << "prior_box_param needs at least one min_size");
    DLC_REQUIRE(p.max_size_size() == 0 || p.max_size_size() == p.min_size_size(),
                Where() << "prior_box_param has " << p.max_size_size() << " max_size for "
                        << p.min_size_size() << " min_size; give one for each, or none");
    // The aspect ratios: 1 first, each other once, with its inverse under flip.
    std::vector<float> ratios = {1.f};
    for (float r : p.aspect_ratio()) {
      DLC_REQUIRE(std::isfinite(r) && r > 0.f,
                  Where() << "prior_box_param.aspect_ratio must be positive, got " << r);
      bool known = false;
      for (float have : ratios) known = known || std::fabs(r - have) < 1e-6f;
      if (known) continue;
      ratios.push_back(r);
      if (p.flip()) ratios.push_back(1.f / r);
    }
    sizes_.clear();
    for (int s = 0; s < p.min_size_size(); ++s) {
      const float min_size = p.min_size(s);
      DLC_REQUIRE(std::isfinite(min_size) && min_size > 0.f,
                  Where() << "prior_box_param.min_size must be positive, got " << min_size);
      sizes_.insert(sizes_.end(), {min_size, min_size});
      if (p.max_size_size() > 0) {
        const float max_size = p.max_size(s);
        DLC_REQUIRE(std::isfinite(max_size) && max_size > min_size,
                    Where() << "prior_box_param.max_size " << max_size
                            << " must be larger than its min_size " << min_size);
        const float side = std::sqrt(min_size * max_size);
        sizes_.insert(sizes_.end(), {side, side});
      }
      for (float r : ratios) {
        if (std::fabs(r - 1.f) < 1e-6f) continue;
        sizes_.insert(sizes_.end(), {min_size * std::sqrt(r), min_size / std::sqrt(r)});
      }
    }
    if (p.variance_size() == 0) {
      variances_.assign(4, 0.1f);
    } else {
      DLC_REQUIRE(p.variance_size() == 1 || p.variance_size() == 4,
                  Where() << "prior_box_param takes one variance or four, got " << p.variance_size());
      for (float v : p.variance())
        DLC_REQUIRE(std::isfinite(v) && v > 0.f,
                    Where() << "prior_box_param.variance must be positive, got " << v);
      variances_.assign(p.variance().begin(), p.variance().end());
      if (variances_.size() == 1) variances_.assign(4, variances_[0]);
    }
    // The image size and the step: one value, or an h/w pair.
    const auto one_or_pair = [&](bool has_one, float one, bool has_h, float h, bool has_w, float w,
                                 const std::string& one_name, const std::string& pair,
                                 const char* what, float* out_h, float* out_w) {
      DLC_REQUIRE(!(has_one && (has_h || has_w)),
                  Where() << "prior_box_param: give " << one_name << " or " << pair << "_h and "
                          << pair << "_w, not both");
      DLC_REQUIRE(has_h == has_w,
                  Where() << "prior_box_param: give both " << pair << "_h and " << pair << "_w");
      *out_h = has_one ? one : h;
      *out_w = has_one ? one : w;
      DLC_REQUIRE(!(has_one || has_h) || (*out_h > 0.f && *out_w > 0.f),
                  Where() << "prior_box_param: the " << what << " must be positive");
    };
    float img_h = 0.f, img_w = 0.f;
    one_or_pair(p.has_img_size(), p.img_size(), p.has_img_h(), p.img_h(), p.has_img_w(), p.img_w(),
                "img_size", "img", "image size", &img_h, &img_w);
    img_h_ = static_cast<unsigned>(img_h), img_w_ = static_cast<unsigned>(img_w);
    one_or_pair(p.has_step(), p.step(), p.has_step_h(), p.step_h(), p.has_step_w(), p.step_w(),
                "step", "step", "step", &step_h_, &step_w_);
    const auto upload = [&](const std::vector<float>& values) {
      BufferPtr buffer = ctx_->Allocate(values.size() * sizeof(float));
      ctx_->Write(buffer->mem(), 0, values.size() * sizeof(float), values.data());
      return buffer;
    };
    sizes_buffer_ = upload(sizes_);
    variances_buffer_ = upload(variances_);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (int b = 0; b < 2; ++b)
      DLC_REQUIRE(bottom[b]->num_axes() == 4,
                  Where() << "bottom " << b << " must be N x C x H x W, got "
                          << bottom[b]->shape_string());
    height_ = bottom[0]->shape(2), width_ = bottom[0]->shape(3);
    top[0]->Reshape({1, 2, height_ * width_ * priors() * 4});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int cells = height_ * width_;
    if (cells == 0) return;
    const float img_w = img_w_ > 0 ? float(img_w_) : float(bottom[1]->shape(3));
    const float img_h = img_h_ > 0 ? float(img_h_) : float(bottom[1]->shape(2));
    const float step_w = step_w_ > 0.f ? step_w_ : img_w / width_;
    const float step_h = step_h_ > 0.f ? step_h_ : img_h / height_;
    ctx_->Launch1D(ctx_->Kernel("prior_box.cl", "", "prior_box_forward"), cells * priors(), cells,
                   priors(), width_, step_w, step_h, param_.prior_box_param().offset(), img_w,
                   img_h, int(param_.prior_box_param().clip()), sizes_buffer_->mem(),
                   variances_buffer_->mem(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:
  int priors() const { return static_cast<int>(sizes_.size() / 2); }

  std::vector<float> sizes_;      // per prior of a cell: width, height (pixels)
  std::vector<float> variances_;  // 4
  BufferPtr sizes_buffer_, variances_buffer_;
  unsigned img_h_ = 0, img_w_ = 0;  // 0: bottom 1's
  float step_h_ = 0.f, step_w_ = 0.f;  // 0: the image over the map
  int height_ = 0, width_ = 0;
};

REGISTER_LAYER_CLASS(PriorBox);

}  // namespace dlcaffe
