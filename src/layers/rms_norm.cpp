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
// CPU shape a row to a work-item (core/row_normalization.hpp, which LayerNorm
// shares; RunOptions::kernel_shape forces one, the tests run both).
#include <algorithm>
#include <memory>
#include <string>

#include "core/row_normalization.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class RMSNormLayer : public RowNormalizationLayer {
 public:
  using RowNormalizationLayer::RowNormalizationLayer;
  const char* type() const override { return "RMSNorm"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::RMSNormParameter& p = param_.rms_norm_param();
    eps_ = CheckedEps(p.eps(), "rms_norm_param.eps");
    affine_ = p.elementwise_affine();
    const std::vector<int> shape = NormalizedShape(*bottom[0], p.axis());
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
    const std::vector<int> shape = NormalizedShape(*bottom[0], param_.rms_norm_param().axis());
    ReshapeRows(bottom, top, shape, {"scale"});
    rstd_.Reshape(std::vector<int>{rows_});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (rows_ == 0 || dim_ == 0) return;
    SaveInput(bottom, top);
    const cl_mem x = bottom[0]->data();
    const cl_mem scale = affine_ ? blobs_[0]->data() : x;
    LaunchRows("rms_norm.cl", Options(), "rms_norm_forward_item", "rms_norm_forward_group", eps_,
               x, scale, top[0]->data(), rstd_.data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (rows_ == 0 || dim_ == 0) return;
    const cl_mem x = SavedInput(bottom, top);
    const cl_mem dy = top[0]->diff();
    // The scale's gradient first: in place, dx overwrites dy.
    if (affine_ && param_propagate_down(0)) ScaleGradient(x, dy);
    if (!propagate_down[0]) return;
    const cl_mem scale = affine_ ? blobs_[0]->data() : x;
    LaunchRows("rms_norm.cl", Options(), "rms_norm_backward_item", "rms_norm_backward_group", x,
               scale, dy, rstd_.data(), bottom[0]->diff());
  }

 private:
  std::string Options() const {
    return std::string("-DAFFINE=") + (affine_ ? "1" : "0") + StorageOption("DATA_TYPE", storage_);
  }

  // dscale += sum over rows of dy * xhat, column by column, by chunks of
  // rows (ColumnChunks), so that a few columns still fill the device.
  void ScaleGradient(cl_mem x, cl_mem dy) {
    const int units = std::max(1, ctx_->info().compute_units);
    int chunks = 0, rows_per_chunk = 0;
    ColumnChunks((RowPerItem() ? 64LL : 2048LL) * units, dim_, &chunks, &rows_per_chunk);
    const size_t local = std::min<size_t>(64, dim_);
    const cl_kernel grad = ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_param_grad");
    if (chunks == 1) {
      ctx_->Launch(grad, NDRange(RoundUp(dim_, local), 1), NDRange(local, 1), rows_, dim_,
                   rows_per_chunk, 1, x, dy, rstd_.data(), blobs_[0]->diff());
      return;
    }
    const cl_mem partial = PartialSums(size_t(chunks) * dim_);
    ctx_->Launch(grad, NDRange(RoundUp(dim_, local), chunks), NDRange(local, 1), rows_, dim_,
                 rows_per_chunk, 0, x, dy, rstd_.data(), partial);
    ctx_->Launch1D(ctx_->Kernel("rms_norm.cl", Options(), "rms_norm_param_finish"), dim_, dim_,
                   chunks, partial, blobs_[0]->diff());
  }

  Blob rstd_{*ctx_};  // per row, for backward
};

REGISTER_LAYER_CLASS(RMSNorm);

}  // namespace dlcaffe
