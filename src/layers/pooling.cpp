// Pooling (Caffe "Pooling"): MAX, AVE or STOCHASTIC over kernel_h x kernel_w
// windows of an N x C x H x W blob, with Caffe's parameters, output-size
// rounding (CEIL by default, or FLOOR) and its rule that drops a last window
// starting inside the padding. MAX may write the argmax as a second top
// (Caffe's mask). MAX and STOCHASTIC backward gather through a saved index
// buffer (the argmax or the sampled element), so they need no atomics.
// average_excludes_padding (dlcaffe, ONNX count_include_pad = 0): AVE divides
// by the number of input elements in each window instead of Caffe's window
// clipped to the padded input. Data and diffs may be stored in 16 bits (mixed
// precision), except with the mask top: its indices need float.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class PoolingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Pooling"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  // Only MAX pooling has a second top, the mask.
  int MaxTopBlobs() const override {
    return param_.pooling_param().pool() == caffe::PoolingParameter_PoolMethod_MAX ? 2 : 1;
  }
  bool SupportsStorage(StorageType) const override { return param_.top_size() < 2; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::PoolingParameter& p = param_.pooling_param();
    method_ = p.pool();
    global_pooling_ = p.global_pooling();
    DLC_REQUIRE(!p.average_excludes_padding() ||
                    method_ == caffe::PoolingParameter_PoolMethod_AVE,
                Where() << "average_excludes_padding applies to AVE pooling only");
    ave_options_ = p.average_excludes_padding() ? "-DEXCLUDE_PAD=1" : "";
    if (global_pooling_) {
      DLC_REQUIRE(!p.has_kernel_size() && !p.has_kernel_h() && !p.has_kernel_w(),
                  Where() << "with global_pooling the kernel size cannot be specified");
    } else {
      DLC_REQUIRE(p.has_kernel_size() != (p.has_kernel_h() && p.has_kernel_w()),
                  Where() << "give kernel_size OR both kernel_h and kernel_w, not both");
      DLC_REQUIRE(p.has_kernel_size() || (p.has_kernel_h() && p.has_kernel_w()),
                  Where() << "a non-square kernel needs both kernel_h and kernel_w");
      kernel_h_ = p.has_kernel_size() ? p.kernel_size() : p.kernel_h();
      kernel_w_ = p.has_kernel_size() ? p.kernel_size() : p.kernel_w();
      DLC_REQUIRE(kernel_h_ > 0 && kernel_w_ > 0,
                  Where() << "kernel size must be positive, got " << kernel_h_ << " x "
                          << kernel_w_);
    }
    DLC_REQUIRE((!p.has_pad() && p.has_pad_h() && p.has_pad_w()) ||
                    (!p.has_pad_h() && !p.has_pad_w()),
                Where() << "give pad OR both pad_h and pad_w");
    pad_h_ = p.has_pad_h() ? p.pad_h() : p.pad();
    pad_w_ = p.has_pad_w() ? p.pad_w() : p.pad();
    DLC_REQUIRE((!p.has_stride() && p.has_stride_h() && p.has_stride_w()) ||
                    (!p.has_stride_h() && !p.has_stride_w()),
                Where() << "give stride OR both stride_h and stride_w");
    stride_h_ = p.has_stride_h() ? p.stride_h() : p.stride();
    stride_w_ = p.has_stride_w() ? p.stride_w() : p.stride();
    DLC_REQUIRE(stride_h_ > 0 && stride_w_ > 0,
                Where() << "stride must be positive, got " << stride_h_ << " x " << stride_w_);
    if (global_pooling_) {
      DLC_REQUIRE(pad_h_ == 0 && pad_w_ == 0 && stride_h_ == 1 && stride_w_ == 1,
                  Where() << "with global_pooling only pad = 0 and stride = 1 are allowed");
    }
    if (!global_pooling_ && (pad_h_ != 0 || pad_w_ != 0)) {
      DLC_REQUIRE(method_ != caffe::PoolingParameter_PoolMethod_STOCHASTIC,
                  Where() << "padding is implemented only for MAX and AVE pooling");
      DLC_REQUIRE(pad_h_ < kernel_h_ && pad_w_ < kernel_w_,
                  Where() << "padding " << pad_h_ << " x " << pad_w_
                          << " must be smaller than the kernel " << kernel_h_ << " x "
                          << kernel_w_);
    }
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(bottom[0]->num_axes() == 4,
                Where() << "input must have 4 axes (num, channels, height, width), got "
                        << bottom[0]->shape_string());
    height_ = bottom[0]->shape(2);
    width_ = bottom[0]->shape(3);
    if (global_pooling_) {
      kernel_h_ = height_;
      kernel_w_ = width_;
    }
    pooled_h_ = PooledSize(height_, kernel_h_, pad_h_, stride_h_);
    pooled_w_ = PooledSize(width_, kernel_w_, pad_w_, stride_w_);
    DLC_REQUIRE(pooled_h_ > 0 && pooled_w_ > 0,
                Where() << "kernel " << kernel_h_ << " x " << kernel_w_ << " with pad "
                        << pad_h_ << " x " << pad_w_ << " does not fit input "
                        << bottom[0]->shape_string());
    const std::vector<int> shape{bottom[0]->shape(0), bottom[0]->shape(1), pooled_h_,
                                 pooled_w_};
    top[0]->Reshape(shape);
    if (top.size() > 1) top[1]->Reshape(shape);
    if (method_ != caffe::PoolingParameter_PoolMethod_AVE) {
      const size_t bytes = std::max<size_t>(top[0]->count(), 1) * sizeof(cl_int);
      if (!argmax_ || argmax_->bytes() < bytes) argmax_ = ctx_->Allocate(bytes);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    if (method_ == caffe::PoolingParameter_PoolMethod_MAX) {
      if (top.size() > 1) {
        ctx_->Launch1D(Kernel("-DHAS_TOP_MASK=1", "max_pool_forward", *bottom[0]),
                       n, n, bottom[0]->data(), height_, width_, pooled_h_, pooled_w_,
                       kernel_h_, kernel_w_, stride_h_, stride_w_, pad_h_, pad_w_,
                       top[0]->data(), argmax_->mem(), top[1]->data());
      } else {
        ctx_->Launch1D(Kernel("", "max_pool_forward", *bottom[0]), n, n,
                       bottom[0]->data(), height_, width_, pooled_h_, pooled_w_,
                       kernel_h_, kernel_w_, stride_h_, stride_w_, pad_h_, pad_w_,
                       top[0]->data(), argmax_->mem());
      }
    } else if (method_ == caffe::PoolingParameter_PoolMethod_AVE) {
      ctx_->Launch1D(Kernel(ave_options_, "ave_pool_forward", *bottom[0]), n, n,
                     bottom[0]->data(), height_, width_, pooled_h_, pooled_w_, kernel_h_,
                     kernel_w_, stride_h_, stride_w_, pad_h_, pad_w_, top[0]->data());
    } else if (param_.phase() == caffe::TRAIN) {
      // A fresh seed per pass from the context's generator: reproducible
      // under Context::Seed, and no random state on the device.
      const int seed = static_cast<int>(ctx_->rng()() & 0x7fffffff);
      ctx_->Launch1D(Kernel("", "stochastic_pool_forward_train", *bottom[0]), n, n,
                     bottom[0]->data(), height_, width_, pooled_h_, pooled_w_, kernel_h_,
                     kernel_w_, stride_h_, stride_w_, pad_h_, pad_w_, seed, top[0]->data(),
                     argmax_->mem());
    } else {
      ctx_->Launch1D(Kernel("", "stochastic_pool_forward_test", *bottom[0]), n, n,
                     bottom[0]->data(), height_, width_, pooled_h_, pooled_w_, kernel_h_,
                     kernel_w_, stride_h_, stride_w_, pad_h_, pad_w_, top[0]->data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    DLC_REQUIRE(method_ != caffe::PoolingParameter_PoolMethod_STOCHASTIC ||
                    param_.phase() == caffe::TRAIN,
                Where() << "STOCHASTIC pooling has a gradient only in the TRAIN phase");
    const int n = bottom[0]->count();
    if (method_ != caffe::PoolingParameter_PoolMethod_AVE && stride_h_ >= kernel_h_ &&
        stride_w_ >= kernel_w_) {
      const uint32_t zero = 0;  // in every storage type
      ctx_->FillPattern(bottom[0]->diff(), 0, n * bottom[0]->element_bytes(), &zero,
                        bottom[0]->element_bytes());
      const int top_count = top[0]->count();
      ctx_->Launch1D(Kernel("", "max_pool_backward_scatter", *bottom[0]), top_count,
                     top_count, top[0]->diff(), argmax_->mem(), height_ * width_,
                     pooled_h_ * pooled_w_, bottom[0]->diff());
    } else if (method_ != caffe::PoolingParameter_PoolMethod_AVE) {
      // MAX: the argmax; STOCHASTIC: the element sampled by the TRAIN forward.
      ctx_->Launch1D(Kernel("", "max_pool_backward", *bottom[0]), n, n,
                     top[0]->diff(), argmax_->mem(), height_, width_, pooled_h_,
                     pooled_w_, kernel_h_, kernel_w_, stride_h_, stride_w_, pad_h_,
                     pad_w_, bottom[0]->diff());
    } else {
      ctx_->Launch1D(Kernel(ave_options_, "ave_pool_backward", *bottom[0]), n, n,
                     top[0]->diff(), height_, width_, pooled_h_, pooled_w_, kernel_h_,
                     kernel_w_, stride_h_, stride_w_, pad_h_, pad_w_, bottom[0]->diff());
    }
  }

 private:
  // A pooling.cl kernel built with `options` for `blob`'s storage type (the
  // layer's bottom and tops share it).
  cl_kernel Kernel(const std::string& options, const char* name, const Blob& blob) {
    return ctx_->Kernel("pooling.cl", options + StorageOption("DATA_TYPE", blob.storage_type()),
                        name);
  }

  // Caffe's output size: CEIL (default) or FLOOR of (size + 2 pad - kernel) /
  // stride, plus one; when the layer pads (either axis, as Caffe tests it), a
  // last window that would start inside the padding (past the input) is dropped.
  int PooledSize(int size, int kernel, int pad, int stride) const {
    const bool pads = pad_h_ > 0 || pad_w_ > 0;
    const float span = static_cast<float>(size + 2 * pad - kernel) / stride;
    const bool floor_mode =
        param_.pooling_param().round_mode() == caffe::PoolingParameter_RoundMode_FLOOR;
    int pooled = static_cast<int>(floor_mode ? std::floor(span) : std::ceil(span)) + 1;
    if (pads && (pooled - 1) * stride >= size + pad) --pooled;
    return pooled;
  }

  caffe::PoolingParameter::PoolMethod method_ = caffe::PoolingParameter_PoolMethod_MAX;
  bool global_pooling_ = false;
  std::string ave_options_;  // AVE kernels' -D options (average_excludes_padding)
  int kernel_h_ = 0, kernel_w_ = 0, stride_h_ = 1, stride_w_ = 1, pad_h_ = 0, pad_w_ = 0;
  int height_ = 0, width_ = 0, pooled_h_ = 0, pooled_w_ = 0;
  // int per top element: offset in its (n, c) plane of the max (MAX) or of
  // the sampled element (STOCHASTIC in TRAIN)
  BufferPtr argmax_;
};

REGISTER_LAYER_CLASS(Pooling);
REGISTER_LAYER_TRAITS(Pooling, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
