// RMSNorm (dlcaffe "RMSNorm", rms_norm_param): torch.nn.RMSNorm, LLaMA's and
// T5's normalization. Each row (the axes from `axis` on, flattened; negative
// axis counts from the end) is divided by its root mean square,
//   y = x / sqrt(mean(x^2) + eps) * scale,
// with no mean subtracted and no bias. With elementwise_affine (the default)
// scale is blobs[0], of the normalized shape, filled with 1; without it there
// are no blobs.
//
// Works in place (a copy of x is kept for backward). Backward computes the
// input's gradient and accumulates scale's. x, y, their gradients and that
// copy may be stored in 16 bits (mixed precision); the scale, the row
// statistics and the sums are float.
//
// The row kernels (src/cl/rms_norm.cl) give a row to a work-group, or in the
// CPU shape a row to a work-item; RunOptions::kernel_shape forces one
// (the tests run both).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/blob_copy.hpp"
#include "core/pointwise_kernel.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class RMSNormLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "RMSNorm"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::RMSNormParameter& p = param_.rms_norm_param();
    DLC_REQUIRE(std::isfinite(p.eps()) && p.eps() >= 0.f,
                Where() << "rms_norm_param.eps must be finite and >= 0, got " << p.eps());
    eps_ = p.eps();
    affine_ = p.elementwise_affine();
    const std::vector<int> shape = NormalizedShape(*bottom[0]);
    if (blobs_.empty() && affine_) {
      blobs_.push_back(std::make_shared<Blob>(*ctx_, shape));
      blobs_[0]->SetData(1.f);
    }
    const size_t expected = affine_ ? 1 : 0;
    DLC_REQUIRE(blobs_.size() == expected,
                Where() << "has " << blobs_.size() << " parameter blob(s), expected " << expected
                        << (affine_ ? " (scale)" : " (no elementwise_affine)"));
    if (affine_) set_param_propagate_down(0, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const std::vector<int> shape = NormalizedShape(*bottom[0]);
    if (affine_)
      DLC_REQUIRE(blobs_[0]->shape() == shape,
                  Where() << "scale has shape " << blobs_[0]->shape_string() << ", but the input "
                          << bottom[0]->shape_string() << " normalizes over "
                          << ShapeString(shape) << "from axis " << axis_);
    rows_ = bottom[0]->count(0, axis_);
    dim_ = bottom[0]->count(axis_);
    top[0]->ReshapeLike(*bottom[0]);
    rstd_.Reshape(std::vector<int>{rows_});
    storage_ = bottom[0]->storage_type();
    if (bottom[0] == top[0]) {
      if (x_copy_.storage_type() != storage_) x_copy_.set_storage_type(storage_);
      x_copy_.set_diff_on_demand();  // data only: as large as the input
      x_copy_.ReshapeLike(*bottom[0]);
    }
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (rows_ == 0 || dim_ == 0) return;
    if (bottom[0] == top[0]) CopyBlobValues(*ctx_, *bottom[0], bottom[0]->data(), x_copy_.data());
    const cl_mem x = bottom[0]->data();
    const cl_mem scale = affine_ ? blobs_[0]->data() : x;
    if (RowPerItem()) {
      const size_t local = ItemGroupSize();
      ctx_->Launch(ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_forward_item"),
                   NDRange(RoundUp(rows_, local)), NDRange(local), rows_, dim_, eps_, x, scale,
                   top[0]->data(), rstd_.data());
    } else {
      ctx_->Launch(ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_forward_group"),
                   NDRange(size_t(rows_) * kGroup), NDRange(kGroup), dim_, eps_, x, scale,
                   top[0]->data(), rstd_.data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (rows_ == 0 || dim_ == 0) return;
    const cl_mem x = bottom[0] == top[0] ? x_copy_.data() : bottom[0]->data();
    const cl_mem dy = top[0]->diff();
    // The scale's gradient first: in place, dx overwrites dy.
    if (affine_ && param_propagate_down(0)) ScaleGradient(x, dy);
    if (!propagate_down[0]) return;
    const cl_mem scale = affine_ ? blobs_[0]->data() : x;
    if (RowPerItem()) {
      const size_t local = ItemGroupSize();
      ctx_->Launch(ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_backward_item"),
                   NDRange(RoundUp(rows_, local)), NDRange(local), rows_, dim_, x, scale, dy,
                   rstd_.data(), bottom[0]->diff());
    } else {
      ctx_->Launch(ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_backward_group"),
                   NDRange(size_t(rows_) * kGroup), NDRange(kGroup), dim_, x, scale, dy,
                   rstd_.data(), bottom[0]->diff());
    }
  }

 private:
  static constexpr size_t kGroup = 64;  // RMS_GROUP in rms_norm.cl

  static std::string ShapeString(const std::vector<int>& shape) {
    std::string s;
    for (int d : shape) s += std::to_string(d) + " ";
    return s;
  }

  std::vector<int> NormalizedShape(const Blob& bottom) {
    const int axes = bottom.num_axes();
    const int axis = param_.rms_norm_param().axis();
    DLC_REQUIRE(axes > 0 && axis >= -axes && axis < axes,
                Where() << "axis " << axis << " is out of range for the input "
                        << bottom.shape_string());
    axis_ = axis < 0 ? axis + axes : axis;
    return std::vector<int>(bottom.shape().begin() + axis_, bottom.shape().end());
  }

  std::string Options() const {
    return std::string("-DAFFINE=") + (affine_ ? "1" : "0") + StorageOption("DATA_TYPE", storage_);
  }

  // A CPU runs a work-group on one core: a group per row brings only
  // barriers there (as LayerNorm measured).
  bool RowPerItem() const { return choices_.cpu_shaped_kernels; }
  // Work-groups of rows: at least four per compute unit, at most 64 rows each.
  size_t ItemGroupSize() const {
    const int per_group = rows_ / (4 * std::max(1, ctx_->info().compute_units));
    return static_cast<size_t>(std::min(64, std::max(1, per_group)));
  }

  // dscale += sum over rows of dy * xhat, column by column. Long columns are
  // cut into chunks of rows whose sums a second kernel adds up in order, so
  // that a few columns still fill the device.
  void ScaleGradient(cl_mem x, cl_mem dy) {
    const int units = std::max(1, ctx_->info().compute_units);
    const long long target_items = (RowPerItem() ? 64LL : 2048LL) * units;
    const int max_chunks = std::max(1, rows_ / 8);  // at least 8 rows a chunk
    int chunks = static_cast<int>(
        std::min<long long>(max_chunks, std::max(1LL, (target_items + dim_ - 1) / dim_)));
    const int rows_per_chunk = (rows_ + chunks - 1) / chunks;
    chunks = (rows_ + rows_per_chunk - 1) / rows_per_chunk;
    const size_t local = std::min<size_t>(64, dim_);
    const cl_kernel grad = ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_param_grad");
    if (chunks == 1) {
      ctx_->Launch(grad, NDRange(RoundUp(dim_, local), 1), NDRange(local, 1), rows_, dim_,
                   rows_per_chunk, 1, x, dy, rstd_.data(), blobs_[0]->diff());
      return;
    }
    const size_t floats = size_t(chunks) * dim_;
    if (!partial_ || partial_->bytes() < floats * sizeof(float))
      partial_ = ctx_->Allocate(floats * sizeof(float));
    ctx_->Launch(grad, NDRange(RoundUp(dim_, local), chunks), NDRange(local, 1), rows_, dim_,
                 rows_per_chunk, 0, x, dy, rstd_.data(), partial_->mem());
    ctx_->Launch1D(ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_param_finish"), dim_, dim_,
                   chunks, partial_->mem(), blobs_[0]->diff());
  }

  float eps_ = 1e-6f;
  bool affine_ = true;
  int axis_ = 0, rows_ = 0, dim_ = 0;
  StorageType storage_ = StorageType::kFloat32;  // x's and y's (Reshape)
  Blob rstd_{*ctx_};    // per row, for backward
  Blob x_copy_{*ctx_};  // in place: x as Forward saw it
  BufferPtr partial_;   // the scale gradient's chunk sums
};

REGISTER_LAYER_CLASS(RMSNorm);

}  // namespace dlcaffe
