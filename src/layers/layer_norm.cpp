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
// The row kernels (src/cl/layer_norm.cl) give a row to a work-group, or on
// devices that want CPU-shaped kernels, a row to a work-item;
// RunOptions::kernel_shape forces one (the tests run both).
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/blob_copy.hpp"
#include "core/gemm_config.hpp"
#include "core/pointwise_kernel.hpp"
#include "core/storage_option.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "dlcaffe/math.hpp"

namespace dlcaffe {

class LayerNormLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LayerNorm"; }
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::LayerNormParameter& p = param_.layer_norm_param();
    DLC_REQUIRE(std::isfinite(p.eps()) && p.eps() >= 0.f,
                Where() << "layer_norm_param.eps must be finite and >= 0, got " << p.eps());
    eps_ = p.eps();
    affine_ = p.elementwise_affine();
    bias_ = affine_ && p.bias();
    const std::vector<int> shape = NormalizedShape(*bottom[0]);
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
    const std::vector<int> shape = NormalizedShape(*bottom[0]);
    for (size_t i = 0; i < blobs_.size(); ++i)
      DLC_REQUIRE(blobs_[i]->shape() == shape,
                  Where() << (i == 0 ? "gamma" : "beta") << " has shape "
                          << blobs_[i]->shape_string() << ", but the input "
                          << bottom[0]->shape_string() << " normalizes over "
                          << ShapeString(shape) << "from axis " << axis_);
    rows_ = bottom[0]->count(0, axis_);
    dim_ = bottom[0]->count(axis_);
    top[0]->ReshapeLike(*bottom[0]);
    mean_.Reshape(std::vector<int>{rows_});
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
    const bool in_place = bottom[0] == top[0];
    if (in_place) CopyBlobValues(*ctx_, *bottom[0], bottom[0]->data(), x_copy_.data());
    const cl_mem x = bottom[0]->data();
    const cl_mem gamma = affine_ ? blobs_[0]->data() : x;
    const cl_mem beta = bias_ ? blobs_[1]->data() : x;
    if (RowPerItem()) {
      const size_t local = ItemGroupSize();
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_forward_item"),
                   NDRange(RoundUp(rows_, local)), NDRange(local), rows_, dim_, eps_, x, gamma,
                   beta, top[0]->data(), mean_.data(), rstd_.data());
    } else {
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_forward_group"),
                   NDRange(size_t(rows_) * kGroup), NDRange(kGroup), dim_, eps_, x, gamma, beta,
                   top[0]->data(), mean_.data(), rstd_.data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (rows_ == 0 || dim_ == 0) return;
    const cl_mem x = bottom[0] == top[0] ? x_copy_.data() : bottom[0]->data();
    const cl_mem dy = top[0]->diff();
    // The parameters first: in place, dx overwrites dy.
    if (affine_ && (param_propagate_down(0) || (bias_ && param_propagate_down(1))))
      ParameterGradients(x, dy);
    if (!propagate_down[0]) return;
    const cl_mem gamma = affine_ ? blobs_[0]->data() : x;
    if (RowPerItem()) {
      const size_t local = ItemGroupSize();
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_backward_item"),
                   NDRange(RoundUp(rows_, local)), NDRange(local), rows_, dim_, x, gamma, dy,
                   mean_.data(), rstd_.data(), bottom[0]->diff());
    } else {
      ctx_->Launch(ctx_->Kernel("layer_norm.cl", Options(), "layer_norm_backward_group"),
                   NDRange(size_t(rows_) * kGroup), NDRange(kGroup), dim_, x, gamma, dy,
                   mean_.data(), rstd_.data(), bottom[0]->diff());
    }
  }

 private:
  static constexpr size_t kGroup = 64;  // LN_GROUP in layer_norm.cl

  static std::string ShapeString(const std::vector<int>& shape) {
    std::string s;
    for (int d : shape) s += std::to_string(d) + " ";
    return s;
  }

  std::vector<int> NormalizedShape(const Blob& bottom) {
    const int axes = bottom.num_axes();
    const int axis = param_.layer_norm_param().axis();
    DLC_REQUIRE(axes > 0 && axis >= -axes && axis < axes,
                Where() << "axis " << axis << " is out of range for the input "
                        << bottom.shape_string());
    axis_ = axis < 0 ? axis + axes : axis;
    return std::vector<int>(bottom.shape().begin() + axis_, bottom.shape().end());
  }

  std::string Options() const {
    return std::string("-DAFFINE=") + (affine_ ? "1" : "0") + " -DBIAS=" + (bias_ ? "1" : "0") +
           StorageOption("DATA_TYPE", storage_);
  }

  bool RowPerItem() const {
    // A CPU runs a work-group on one core, so a group per row brings no
    // more parallelism than an item per row, only barriers (docs/benchmarks.md,
    // M9).
    return choices_.cpu_shaped_kernels;
  }
  // Work-groups of rows: at least four per compute unit, at most 64 rows each.
  size_t ItemGroupSize() const {
    const int per_group = rows_ / (4 * std::max(1, ctx_->info().compute_units));
    return static_cast<size_t>(std::min(64, std::max(1, per_group)));
  }

  // dgamma += sum over rows of dy * xhat, dbeta += sum of dy, column by
  // column. Long columns are cut into chunks of rows whose sums a second
  // kernel adds up in order, so that a few columns still fill the device.
  // The GPU shape gives a column of a chunk to a work-item (neighbours read
  // neighbouring columns); the CPU shape 16 columns in float16 vectors. The
  // shape is the layer's (LayerChoices::cpu_shaped_kernels).
  void ParameterGradients(cl_mem x, cl_mem dy) {
    const bool cpu = choices_.cpu_shaped_kernels;
    const int units = std::max(1, ctx_->info().compute_units);
    const int blocks = (dim_ + 15) / 16;  // CPU shape: of 16 columns
    const long long target_items = cpu ? 8LL * units : 2048LL * units;
    const long long per_chunk = cpu ? blocks : dim_;
    const int max_chunks = std::max(1, rows_ / 8);  // at least 8 rows a chunk
    int chunks = static_cast<int>(std::min<long long>(
        max_chunks, std::max(1LL, (target_items + per_chunk - 1) / per_chunk)));
    const int rows_per_chunk = (rows_ + chunks - 1) / chunks;
    chunks = (rows_ + rows_per_chunk - 1) / rows_per_chunk;
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
    const size_t floats = size_t(chunks) * dim_ * 2;
    if (!partial_ || partial_->bytes() < floats * sizeof(float))
      partial_ = ctx_->Allocate(floats * sizeof(float));
    const cl_mem partial = partial_->mem();
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

  float eps_ = 1e-5f;
  bool affine_ = true, bias_ = true;
  int axis_ = 0, rows_ = 0, dim_ = 0;
  StorageType storage_ = StorageType::kFloat32;  // x's and y's (Reshape)
  Blob mean_{*ctx_}, rstd_{*ctx_};  // per row, for backward
  Blob x_copy_{*ctx_};              // in place: x as Forward saw it
  BufferPtr partial_;               // the parameter gradients' chunk sums
};

REGISTER_LAYER_CLASS(LayerNorm);
REGISTER_LAYER_TRAITS(LayerNorm, LayerTraits().BackwardReadsNoTop());

}  // namespace dlcaffe
