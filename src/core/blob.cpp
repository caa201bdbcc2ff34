#include "dlcaffe/blob.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "core/storage_convert.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/half_conversion.hpp"

namespace dlcaffe {

Blob::Blob(Context& ctx) : ctx_(&ctx) {}

Blob::Blob(Context& ctx, const std::vector<int>& shape) : ctx_(&ctx) { Reshape(shape); }

void Blob::Reshape(const std::vector<int>& shape) {
  std::ostringstream dims;
  for (size_t i = 0; i < shape.size(); ++i) dims << (i ? " x " : "") << shape[i];
  bool empty = false;
  for (int d : shape) {
    DLC_REQUIRE(d >= 0, "negative blob dimension " << d << " (shape " << dims.str() << ")");
    empty = empty || d == 0;
  }
  // Saturates: the product of many large dimensions overflows int64 too.
  int64_t count = empty ? 0 : 1;
  bool too_large = false;
  for (size_t i = 0; i < shape.size() && !empty && !too_large; ++i) {
    if (count > INT64_MAX / shape[i]) too_large = true;
    else count *= shape[i];
  }
  DLC_REQUIRE(!too_large && count <= INT_MAX,
              "a blob of shape " << dims.str() << " has "
                                 << (too_large ? std::string("more than 2^63")
                                               : std::to_string(count))
                                 << " elements: " << kBlobTooLarge << " (" << INT_MAX
                                 << ")");
  // A parameter given another shape is other weights to the copies derived
  // from it (Blob::data_version).
  const bool reshaped = shape != shape_;
  shape_ = shape;
  count_ = static_cast<int>(count);
  if (static_cast<size_t>(count_) > capacity_ || !data_) {
    // A released diff stays released: diff() allocates it when asked.
    const bool diff_released = diff_on_demand_ || (data_ && !diff_);
    capacity_ = std::max<size_t>(count_, 1);
    data_ = ctx_->Allocate(capacity_ * element_bytes());
    FillFresh(data_->mem());
    diff_.reset();
    if (!diff_released) diff();
  }
  if (reshaped) MarkDataWritten();
}

cl_mem Blob::diff() const {
  if (!diff_ && data_) {
    diff_ = ctx_->Allocate(capacity_ * element_bytes());
    FillFresh(diff_->mem());
  }
  return diff_ ? diff_->mem() : nullptr;
}

void Blob::UseDataStorage(BufferPtr storage) {
  CHECK(storage);
  CHECK_GE(storage->bytes(), static_cast<size_t>(count_) * element_bytes());
  // The capacity is what both buffers hold, so that a Reshape within it fits.
  capacity_ = storage->bytes() / element_bytes();
  if (diff_) capacity_ = std::min(capacity_, diff_->bytes() / element_bytes());
  data_ = std::move(storage);
}

void Blob::UseDiffStorage(BufferPtr storage) {
  CHECK(storage);
  CHECK_GE(storage->bytes(), static_cast<size_t>(count_) * element_bytes());
  capacity_ = storage->bytes() / element_bytes();
  if (data_) capacity_ = std::min(capacity_, data_->bytes() / element_bytes());
  diff_ = std::move(storage);
}

void Blob::Reshape(const caffe::BlobShape& shape) {
  std::vector<int> dims;
  for (int i = 0; i < shape.dim_size(); ++i) {
    DLC_REQUIRE(shape.dim(i) >= 0, "negative blob dimension " << shape.dim(i));
    DLC_REQUIRE(shape.dim(i) <= INT_MAX,
                "blob dimension " << shape.dim(i) << ": " << kBlobTooLarge << " (" << INT_MAX
                                  << " elements)");
    dims.push_back(static_cast<int>(shape.dim(i)));
  }
  Reshape(dims);
}

int Blob::count(int start_axis, int end_axis) const {
  CHECK_LE(start_axis, end_axis);
  CHECK_GE(start_axis, 0);
  CHECK_LE(end_axis, num_axes());
  int c = 1;
  for (int i = start_axis; i < end_axis; ++i) c *= shape_[i];
  return c;
}

int Blob::CanonicalAxisIndex(int axis) const {
  DLC_REQUIRE(axis >= -num_axes() && axis < num_axes(),
              "axis " << axis << " out of range for a blob of shape "
                      << shape_string());
  return axis < 0 ? axis + num_axes() : axis;
}

std::string Blob::shape_string() const {
  std::ostringstream s;
  for (int d : shape_) s << d << " ";
  s << "(" << count_ << ")";
  return s.str();
}

int Blob::LegacyShape(int index) const {
  CHECK_LE(num_axes(), 4) << "legacy accessors need a blob of at most 4 axes";
  // As in Caffe: axes that do not exist (either end) count as 1.
  if (index >= num_axes() || index < -num_axes()) return 1;
  return shape(index);
}

std::vector<float> Blob::ReadData() const {
  DLC_REQUIRE(data_read_error_.empty(), data_read_error_);
  return ReadFloats(data());
}

std::vector<float> Blob::ReadDiff() const {
  DLC_REQUIRE(diff_read_error_.empty(), diff_read_error_);
  return ReadFloats(diff());
}

std::vector<float> Blob::ReadFloats(cl_mem mem) const {
  std::vector<float> v(count_);
  if (!count_) return v;
  if (storage_type_ == StorageType::kFloat32) {
    ctx_->Read(mem, 0, count_ * sizeof(float), v.data());
    return v;
  }
  std::vector<char> stored(count_ * element_bytes());
  ctx_->Read(mem, 0, stored.size(), stored.data());
  StorageToFloats(stored.data(), count_, storage_type_, v.data());
  return v;
}

void Blob::WriteFloats(cl_mem mem, const float* values, int n, int offset) {
  if (storage_type_ == StorageType::kFloat32) {
    ctx_->Write(mem, offset * sizeof(float), n * sizeof(float), values);
    return;
  }
  if (n <= 0) return;
  // Narrowed on the device, through a float staging buffer: the host's
  // conversion is one value at a time, and for an input batch written every
  // iteration it cost nearly as much as a GPU's resnet50 forward pass
  // (docs/benchmarks.md). Same bits (core/storage_convert.hpp); the
  // in-order queue keeps the staging buffer until the kernel has read it.
  const BufferPtr staging = ctx_->Allocate(n * sizeof(float));
  ctx_->Write(staging->mem(), 0, n * sizeof(float), values);
  ConvertStorage(*ctx_, staging->mem(), 0, StorageType::kFloat32, mem, offset, storage_type_, n);
}

void Blob::FillFloats(cl_mem mem, size_t count, float value) const {
  if (storage_type_ == StorageType::kFloat32) {
    ctx_->Fill(mem, 0, count, value);
    return;
  }
  char pattern[4];
  FloatsToStorage(&value, 1, storage_type_, pattern);
  ctx_->FillPattern(mem, 0, count * element_bytes(), pattern, element_bytes());
}

void Blob::FillFresh(cl_mem mem) const { FillFloats(mem, capacity_, ctx_->fresh_value()); }

void Blob::set_storage_type(StorageType type) {
  if (type == storage_type_) return;
  storage_type_ = type;
  if (!data_) return;
  const bool diff_released = diff_on_demand_ || !diff_;
  capacity_ = std::max<size_t>(count_, 1);
  data_ = ctx_->Allocate(capacity_ * element_bytes());
  FillFresh(data_->mem());
  diff_.reset();
  if (!diff_released) diff();
}

void Blob::WriteData(const std::vector<float>& values) {
  CHECK_EQ(values.size(), static_cast<size_t>(count_));
  WriteData(values.data(), count_);
}

void Blob::WriteDiff(const std::vector<float>& values) {
  CHECK_EQ(values.size(), static_cast<size_t>(count_));
  WriteDiff(values.data(), count_);
}

void Blob::WriteData(const float* values, int n, int offset) {
  CHECK_LE(offset + n, count_);
  WriteFloats(data(), values, n, offset);
  MarkDataWritten();
}

void Blob::WriteDiff(const float* values, int n, int offset) {
  CHECK_LE(offset + n, count_);
  WriteFloats(diff(), values, n, offset);
}

void Blob::SetData(float value) {
  FillFloats(data(), count_, value);
  MarkDataWritten();
}
void Blob::SetDiff(float value) { FillFloats(diff(), count_, value); }

void Blob::ShareData(const Blob& other) {
  CHECK_EQ(count_, other.count());
  CHECK(storage_type_ == other.storage_type_) << "sharing storage of another type";
  data_ = other.data_;
}

void Blob::ShareDiff(const Blob& other) {
  CHECK_EQ(count_, other.count());
  CHECK(storage_type_ == other.storage_type_) << "sharing storage of another type";
  diff_ = other.diff_;
}

static std::vector<int> ProtoShape(const caffe::BlobProto& proto) {
  std::vector<int> shape;
  if (proto.has_num() || proto.has_channels() || proto.has_height() ||
      proto.has_width()) {
    shape = {proto.num(), proto.channels(), proto.height(), proto.width()};
  } else {
    for (int i = 0; i < proto.shape().dim_size(); ++i)
      shape.push_back(static_cast<int>(proto.shape().dim(i)));
  }
  return shape;
}

bool Blob::ShapeEquals(const caffe::BlobProto& proto) const {
  if (proto.has_num() || proto.has_channels() || proto.has_height() ||
      proto.has_width()) {
    // Legacy 4-D shape: ours may have fewer axes (missing leading ones are 1).
    return num_axes() <= 4 && LegacyShape(-4) == proto.num() &&
           LegacyShape(-3) == proto.channels() &&
           LegacyShape(-2) == proto.height() && LegacyShape(-1) == proto.width();
  }
  return ProtoShape(proto) == shape_;
}

void Blob::FromProto(const caffe::BlobProto& proto, bool reshape) {
  if (reshape) {
    Reshape(ProtoShape(proto));
  } else {
    if (!ShapeEquals(proto)) {
      std::ostringstream given;
      for (int d : ProtoShape(proto)) given << d << " ";
      DLC_FAIL("cannot copy a blob of shape " << given.str() << "into one of shape "
                                              << shape_string());
    }
  }
  std::vector<float> values(count_);
  if (proto.double_data_size() > 0) {
    DLC_REQUIRE(proto.double_data_size() == count_,
                "blob proto holds " << proto.double_data_size() << " values for "
                                    << count_ << " elements");
    for (int i = 0; i < count_; ++i) values[i] = static_cast<float>(proto.double_data(i));
  } else {
    DLC_REQUIRE(proto.data_size() == count_, "blob proto holds " << proto.data_size()
                                                 << " values for " << count_
                                                 << " elements");
    for (int i = 0; i < count_; ++i) values[i] = proto.data(i);
  }
  if (count_) WriteData(values);
  if (proto.diff_size() == count_ && count_ > 0) {
    for (int i = 0; i < count_; ++i) values[i] = proto.diff(i);
    WriteDiff(values);
  } else if (proto.double_diff_size() == count_ && count_ > 0) {
    for (int i = 0; i < count_; ++i) values[i] = static_cast<float>(proto.double_diff(i));
    WriteDiff(values);
  }
}

void Blob::ToProto(caffe::BlobProto* proto, bool write_diff) const {
  proto->Clear();
  for (int d : shape_) proto->mutable_shape()->add_dim(d);
  std::vector<float> values = ReadData();
  proto->mutable_data()->Reserve(count_);
  for (float v : values) proto->add_data(v);
  if (write_diff) {
    values = ReadDiff();
    for (float v : values) proto->add_diff(v);
  }
}

}  // namespace dlcaffe
