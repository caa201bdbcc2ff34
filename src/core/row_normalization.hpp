// What LayerNorm and RMSNorm share (src/layers/layer_norm.cpp,
// rms_norm.cpp): rows made of the axes from `axis` on, flattened (negative
// axis counts from the end); parameters of the normalized shape; work in
// place by keeping a copy of x for backward; row kernels in two shapes (a
// work-group per row on a GPU, a work-item per row in the CPU shape:
// LayerChoices::cpu_shaped_kernels, as the plan decided); and parameter
// gradients summed column by column over chunks of rows, which a second
// kernel adds up in order (deterministic). x, y and their gradients may be
// stored in 16 bits; parameters, row statistics and sums are float.
// Internal to the library.
#pragma once
#include <string>
#include <vector>

#include "dlcaffe/layer.hpp"

namespace dlcaffe {

class RowNormalizationLayer : public Layer {
 public:
  using Layer::Layer;
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  static constexpr size_t kGroup = 64;  // LN_GROUP and RMS_GROUP in the kernels

  // eps from `field` ("layer_norm_param.eps"): finite and >= 0.
  float CheckedEps(float eps, const char* field) const;
  // The normalized shape (bottom's axes from `axis` on); sets axis_.
  std::vector<int> NormalizedShape(const Blob& bottom, int axis);
  // Checks that every parameter blob has `shape` (`names` says which is
  // which in messages), then shapes the rows, the top and the saved copy.
  void ReshapeRows(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top,
                   const std::vector<int>& shape, const std::vector<const char*>& names);
  // Forward: in place, x as it comes in is saved for backward.
  void SaveInput(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top);
  // Backward: x as Forward saw it.
  cl_mem SavedInput(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) const;

  // One of the row kernels `item` (rows_, dim_, args...: a work-item per
  // row, in work-groups of ItemGroupSize rows) or `group` (dim_, args...:
  // a work-group of kGroup per row), by the layer's kernel shape.
  template <typename... Args>
  void LaunchRows(const char* file, const std::string& options, const char* item,
                  const char* group, const Args&... args) {
    if (RowPerItem()) {
      const size_t local = ItemGroupSize();
      ctx_->Launch(ctx_->Kernel(file, options, item), NDRange(RoundUp(rows_, local)),
                   NDRange(local), rows_, dim_, args...);
    } else {
      ctx_->Launch(ctx_->Kernel(file, options, group), NDRange(size_t(rows_) * kGroup),
                   NDRange(kGroup), dim_, args...);
    }
  }
  // A CPU runs a work-group on one core, so a group per row brings no more
  // parallelism than an item per row, only barriers (docs/benchmarks.md, M9).
  bool RowPerItem() const { return choices_.cpu_shaped_kernels; }

  // Parameter gradients by chunks of rows: about `target_items` work-items
  // of `per_chunk` each, at least 8 rows a chunk. Sets the two counts.
  void ColumnChunks(long long target_items, long long per_chunk, int* chunks,
                    int* rows_per_chunk) const;
  // Scratch for the chunks' partial sums, kept between passes.
  cl_mem PartialSums(size_t floats);

  float eps_ = 0.f;
  bool affine_ = true;
  int axis_ = 0, rows_ = 0, dim_ = 0;
  StorageType storage_ = StorageType::kFloat32;  // x's and y's (Reshape)

 private:
  // Work-groups of rows: at least four per compute unit, at most 64 rows each.
  size_t ItemGroupSize() const;

  Blob x_copy_{*ctx_};  // in place: x as Forward saw it
  BufferPtr partial_;   // the parameter gradients' chunk sums
};

}  // namespace dlcaffe
