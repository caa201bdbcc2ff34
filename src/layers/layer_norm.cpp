// LayerNorm (dlcaffe "LayerNorm", layer_norm_param): torch.nn.LayerNorm and
// ONNX LayerNormalization. Each row (the axes from `axis` on, flattened;
// negative axis counts from the end) is normalized to mean 0 and variance 1,
//   y = (x - mean) / sqrt(var + eps) * gamma + beta,
// var the biased variance (divided by the row's length), eps inside the
// square root. With elementwise_affine (the default) gamma is blobs[0]
// (filled with 1) and, with bias, beta is blobs[1] (filled with 0), both of
// the normalized shape (bottom.shape[axis:]); without elementwise_affine
// there are no blobs (and `bias` is ignored). ONNX InstanceNormalization
// without affine is axis 2 of N x C x H x W.
//
// Works in place (a copy of x is kept for backward). Backward computes the
// input's gradient and accumulates gamma's and beta's. x, y and their
// gradients may be stored in 16 bits (mixed precision); gamma, beta, the
// row statistics and the sums are float.
//
// The row kernels (src/cl/layer_norm.cl) give a row to a work-group, or in
// the CPU shape a row to a work-item (core/row_normalization.hpp, which
// RMSNorm shares; RunOptions::kernel_shape forces one, the tests run both).
#include <algorithm>
#include <memory>
#include <string>

#include "core/row_normalization.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class LayerNormLayer : public RowNormalizationLayer {
 public:
  using RowNormalizationLayer::RowNormalizationLayer;
  const char* type() const override { return "LayerNorm"; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::LayerNormParameter& p = param_.layer_norm_param();
    eps_ = CheckedEps(p.eps(), "layer_norm_param.eps");
    affine_ = p.elementwise_affine();
    bias_ = affine_ && p.bias();
    const std::vector<int> shape = NormalizedShape(*bottom[0], p.axis());
    const size_t expected = affine_ ? (bias_ ? 2 : 1) : 0;
    if (blobs_.empty() && affine_) {
      blobs_.push_back(std::make_shared<Blob>(*ctx_, shape));
      blobs_[0]->SetData(1.f);
      if (bias_) {
        blobs_.push_back(std::make_shared<Blob>(*ctx_, shape));
        blobs_[1]->SetData(0.f);
      }
    }
    DLC_REQUIRE(blobs_.size() == expected,
                Where() << "has " << blobs_.size() << " parameter blob(s), expected " << expected
                        << (affine_ ? (bias_ ? " (gamma and beta)" : " (gamma)")
                                    : " (no elementwise_affine)"));
    for (size_t i = 0; i < blobs_.size(); ++i) set_param_propagate_down(i, true);
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const std::vector<int> shape =
        NormalizedShape(*bottom[0], param_.layer_norm_param().axis());
    ReshapeRows(bottom, top, shape, {"gamma", "beta"});
    mean_.Reshape(std::vector<int>{rows_});
    rstd_.Reshape(std::vector<int>{rows_});
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    if (rows_ == 0 || dim_ == 0) return;
    SaveInput(bottom, top);
    const cl_mem x = bottom[0]->data();
    const cl_mem gamma = affine_ ? blobs_[0]->data() : x;
    const cl_mem beta = bias_ ? blobs_[1]->data() : x;
    LaunchRows("layer_norm.cl", Options(), "layer_norm_forward_item", "layer_norm_forward_group",
               eps_, x, gamma, beta, top[0]->data(), mean_.data(), rstd_.data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (rows_ == 0 || dim_ == 0) return;
    const cl_mem x = SavedInput(bottom, top);
    const cl_mem dy = top[0]->diff();
    // The parameters first: in place, dx overwrites dy.
    if (affine_ && (param_propagate_down(0) || (bias_ && param_propagate_down(1))))
      ParameterGradients(x, dy);
    if (!propagate_down[0]) return;
    const cl_mem gamma = affine_ ? blobs_[0]->data() : x;
    LaunchRows("layer_norm.cl", Options(), "layer_norm_backward_item",
               "layer_norm_backward_group", x, gamma, dy, mean_.data(), rstd_.data(),
               bottom[0]->diff());
  }

 private:
  std::string Options() const {
    return std::string("-DAFFINE=") + (affine_ ? "1" : "0") + " -DBIAS=" + (bias_ ? "1" : "0") +
           StorageOption("DATA_TYPE", storage_);
  }

  // dgamma += sum over rows of dy * xhat, dbeta += sum of dy, column by
  // column, by chunks of rows (ColumnChunks). The GPU shape gives a column
  // of a chunk to a work-item (neighbours read neighbouring columns); the
  // CPU shape 16 columns in float16 vectors. The shape is the layer's
  // (LayerChoices::cpu_shaped_kernels).
  void ParameterGradients(cl_mem x, cl_mem dy) {
    const bool cpu = RowPerItem();
    const int units = std::max(1, ctx_->info().compute_units);
    const int blocks = (dim_ + 15) / 16;  // CPU shape: of 16 columns
    int chunks = 0, rows_per_chunk = 0;
    ColumnChunks(cpu ? 8LL * units : 2048LL * units, cpu ? blocks : dim_, &chunks,
                 &rows_per_chunk);
    const int write_gamma = param_propagate_down(0) ? 1 : 0;
    const int write_beta = bias_ && param_propagate_down(1) ? 1 : 0;
    const cl_mem gamma_diff = blobs_[0]->diff();
    const cl_mem beta_diff = bias_ ? blobs_[1]->diff() : gamma_diff;
    if (!cpu && chunks == 1) {
      const size_t local = std::min<size_t>(64, dim_);
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_param_grad"),
                   NDRange(RoundUp(dim_, local), 1), NDRange(local, 1), rows_, dim_,
                   rows_per_chunk, 1, write_gamma, write_beta, x, dy, mean_.data(),
                   rstd_.data(), gamma_diff, 0, beta_diff, 0);
      return;
    }
    const cl_mem partial = PartialSums(size_t(chunks) * dim_ * 2);
    if (cpu) {
      const int items = chunks * blocks;
      const size_t local = std::min(8, items);
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_param_grad_cpu"),
                   NDRange(RoundUp(items, local)), NDRange(local), rows_, dim_, rows_per_chunk,
                   blocks, items, x, dy, mean_.data(), rstd_.data(), partial, chunks * dim_);
    } else {
      const size_t local = std::min<size_t>(64, dim_);
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_param_grad"),
                   NDRange(RoundUp(dim_, local), chunks), NDRange(local, 1), rows_, dim_,
                   rows_per_chunk, 0, write_gamma, write_beta, x, dy, mean_.data(),
                   rstd_.data(), partial, 0, partial, chunks * dim_);
    }
    ctx_->Launch1D(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_param_finish"), dim_,
                   dim_, chunks, write_gamma, write_beta, partial, gamma_diff, beta_diff);
  }

  bool bias_ = true;
  Blob mean_{*ctx_}, rstd_{*ctx_};  // per row, for backward
};

REGISTER_LAYER_CLASS(LayerNorm);
REGISTER_LAYER_TRAITS(LayerNorm, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
