#include "core/row_normalization.hpp"

#include <algorithm>
#include <cmath>

#include "core/blob_copy.hpp"

namespace dlcaffe {

namespace {

std::string ShapeString(const std::vector<int>& shape) {
  std::string s;
  for (int d : shape) s += std::to_string(d) + " ";
  return s;
}

}  // namespace

float RowNormalizationLayer::CheckedEps(float eps, const char* field) const {
  DLC_REQUIRE(std::isfinite(eps) && eps >= 0.f,
              Where() << field << " must be finite and >= 0, got " << eps);
  return eps;
}

std::vector<int> RowNormalizationLayer::NormalizedShape(const Blob& bottom, int axis) {
  const int axes = bottom.num_axes();
  DLC_REQUIRE(axes > 0 && axis >= -axes && axis < axes,
              Where() << "axis " << axis << " is out of range for the input "
                      << bottom.shape_string());
  axis_ = axis < 0 ? axis + axes : axis;
  return std::vector<int>(bottom.shape().begin() + axis_, bottom.shape().end());
}

void RowNormalizationLayer::ReshapeRows(const std::vector<Blob*>& bottom,
                                        const std::vector<Blob*>& top,
                                        const std::vector<int>& shape,
                                        const std::vector<const char*>& names) {
  for (size_t i = 0; i < blobs_.size(); ++i)
    DLC_REQUIRE(blobs_[i]->shape() == shape,
                Where() << names.at(i) << " has shape " << blobs_[i]->shape_string()
                        << ", but the input " << bottom[0]->shape_string()
                        << " normalizes over " << ShapeString(shape) << "from axis " << axis_);
  rows_ = bottom[0]->count(0, axis_);
  dim_ = bottom[0]->count(axis_);
  top[0]->ReshapeLike(*bottom[0]);
  storage_ = bottom[0]->storage_type();
  if (bottom[0] == top[0]) {
    if (x_copy_.storage_type() != storage_) x_copy_.set_storage_type(storage_);
    x_copy_.set_diff_on_demand();  // data only: as large as the input
    x_copy_.ReshapeLike(*bottom[0]);
  }
}

void RowNormalizationLayer::SaveInput(const std::vector<Blob*>& bottom,
                                      const std::vector<Blob*>& top) {
  if (bottom[0] == top[0]) CopyBlobValues(*ctx_, *bottom[0], bottom[0]->data(), x_copy_.data());
}

cl_mem RowNormalizationLayer::SavedInput(const std::vector<Blob*>& bottom,
                                         const std::vector<Blob*>& top) const {
  return bottom[0] == top[0] ? x_copy_.data() : bottom[0]->data();
}

size_t RowNormalizationLayer::ItemGroupSize() const {
  const int per_group = rows_ / (4 * std::max(1, ctx_->info().compute_units));
  return static_cast<size_t>(std::min(64, std::max(1, per_group)));
}

void RowNormalizationLayer::ColumnChunks(long long target_items, long long per_chunk,
                                         int* chunks, int* rows_per_chunk) const {
  const int max_chunks = std::max(1, rows_ / 8);  // at least 8 rows a chunk
  *chunks = static_cast<int>(std::min<long long>(
      max_chunks, std::max(1LL, (target_items + per_chunk - 1) / per_chunk)));
  *rows_per_chunk = (rows_ + *chunks - 1) / *chunks;
  *chunks = (rows_ + *rows_per_chunk - 1) / *rows_per_chunk;
}

cl_mem RowNormalizationLayer::PartialSums(size_t floats) {
  if (!partial_ || partial_->bytes() < floats * sizeof(float))
    partial_ = ctx_->Allocate(floats * sizeof(float));
  return partial_->mem();
}

}  // namespace dlcaffe
