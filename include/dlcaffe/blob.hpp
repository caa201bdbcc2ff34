// A Blob is a shape plus two device buffers: `data` and `diff` (the gradient).
// Host access is explicit: Read*/Write* copy between host and device. There is
// no hidden synchronisation state.
#pragma once
#include <CL/cl.h>

#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/caffe.pb.h"
#include "dlcaffe/buffer_pool.hpp"
#include "dlcaffe/storage_type.hpp"

namespace dlcaffe {

// The words of the error for a shape of more elements than a blob holds
// (INT_MAX); the Net adds the layer and top names to it.
inline constexpr char kBlobTooLarge[] = "more than a blob may hold";

class Context;

// Blobs that a shared_ptr owns hand out more owners (the Python bindings keep
// the blobs a layer is given alive while Python holds them).
class Blob : public std::enable_shared_from_this<Blob> {
 public:
  explicit Blob(Context& ctx);
  Blob(Context& ctx, const std::vector<int>& shape);

  // Changes the shape. Storage grows when the new count exceeds the capacity
  // (new storage is zero-filled, NaN under Context::poison()); it never shrinks, as in Caffe.
  void Reshape(const std::vector<int>& shape);
  void Reshape(const caffe::BlobShape& shape);
  void ReshapeLike(const Blob& other) { Reshape(other.shape()); }

  const std::vector<int>& shape() const { return shape_; }
  int shape(int axis) const { return shape_[CanonicalAxisIndex(axis)]; }
  int num_axes() const { return static_cast<int>(shape_.size()); }
  int count() const { return count_; }
  // Product of dimensions [start, end).
  int count(int start_axis, int end_axis) const;
  int count(int start_axis) const { return count(start_axis, num_axes()); }
  // Accepts negative indices (-1 = last axis); throws for out-of-range axes.
  int CanonicalAxisIndex(int axis) const;
  std::string shape_string() const;  // "64 1 28 28 (50176)"
  // Legacy 4-D accessors (missing axes count as 1).
  int num() const { return LegacyShape(0); }
  int channels() const { return LegacyShape(1); }
  int height() const { return LegacyShape(2); }
  int width() const { return LegacyShape(3); }
  int LegacyShape(int index) const;

  // How data and diff are stored (storage_type.hpp): float32 unless the net
  // gives the blob a 16-bit type (mixed precision). The host accessors
  // below (Read*, Write*, Set*, the protos) always speak float and convert.
  StorageType storage_type() const { return storage_type_; }
  // Changes the storage type; storage already held is dropped and comes
  // back fresh (zero, NaN under poison) in the new type.
  void set_storage_type(StorageType type);
  // Bytes of one element in this blob's storage.
  size_t element_bytes() const { return StorageBytes(storage_type_); }

  cl_mem data() const { return data_ ? data_->mem() : nullptr; }
  // The data's version (Buffer::version): copies derived from a parameter
  // (its weights rounded to 16 bits, filters reordered) are made again only
  // when it changes. The host writers below mark the data written; code
  // that writes it on the device through data() (a solver's update, a
  // filler, a user's own kernel or clEnqueueWriteBuffer) must call
  // MarkDataWritten() after, or layers keep using the old weights' copies.
  uint64_t data_version() const { return data_ ? data_->version() : 0; }
  void MarkDataWritten() {
    if (data_) data_->MarkWritten();
  }
  // A diff dropped by ReleaseDiff is allocated again (zero-filled) when asked.
  cl_mem diff() const;
  Context& context() const { return *ctx_; }

  std::vector<float> ReadData() const;
  std::vector<float> ReadDiff() const;
  void WriteData(const std::vector<float>& values);
  void WriteDiff(const std::vector<float>& values);
  void WriteData(const float* values, int n, int offset = 0);
  void WriteDiff(const float* values, int n, int offset = 0);
  void SetData(float value);
  void SetDiff(float value);

  // Share the other blob's storage (both must have the same count and
  // storage type). Sharing a released diff (ReleaseDiff) leaves this blob
  // without one too.
  void ShareData(const Blob& other);
  void ShareDiff(const Blob& other);
  bool SharesDataWith(const Blob& other) const { return data_ == other.data_; }

  // Storage hooks for the Net's inference memory plan (core/memory_plan.hpp).
  // The data buffer, the same object for every blob that shares it.
  const BufferPtr& data_storage() const { return data_; }
  // Keeps data in `storage` (at least count() elements) from now on, sharing it
  // with whatever else holds it; later Reshapes keep it while they fit.
  void UseDataStorage(BufferPtr storage);
  // The same for the diff (the training memory plan, core/training_memory_plan.hpp).
  void UseDiffStorage(BufferPtr storage);
  // Drops the diff buffer (an inference net never reads it); diff() and the
  // diff accessors allocate a zero-filled one again if something asks.
  void ReleaseDiff() { diff_.reset(); }
  // From now on a Reshape or storage change allocates no diff; diff() still
  // makes one when asked. For a layer's own blobs whose diffs nothing reads
  // (a BatchNorm's normalized input, an in-place layer's copy of its input):
  // their diffs would be as large as an activation, and unused.
  void set_diff_on_demand() {
    diff_on_demand_ = true;
    diff_.reset();
  }
  const BufferPtr& diff_storage() const { return diff_; }
  // While `reason` is not empty, reading data to the host (ReadData, ToProto)
  // throws an Error with it: the plan blocks blobs whose storage later layers
  // overwrite. Device access (data()) is not checked.
  void set_data_read_error(std::string reason) { data_read_error_ = std::move(reason); }
  const std::string& data_read_error() const { return data_read_error_; }
  // The same for the diff (ReadDiff, ToProto with diffs): the training plan
  // blocks diffs that other blobs' gradients overwrite.
  void set_diff_read_error(std::string reason) { diff_read_error_ = std::move(reason); }
  const std::string& diff_read_error() const { return diff_read_error_; }

  // Caffe's serialisation (BlobProto with `shape`, or legacy num/channels/...).
  void FromProto(const caffe::BlobProto& proto, bool reshape = true);
  void ToProto(caffe::BlobProto* proto, bool write_diff = false) const;
  bool ShapeEquals(const caffe::BlobProto& proto) const;

 private:
  // Host access in floats, converting from and to the storage type (writes
  // narrow on the device, reads widen on the host).
  std::vector<float> ReadFloats(cl_mem mem) const;
  void WriteFloats(cl_mem mem, const float* values, int n, int offset);
  void FillFloats(cl_mem mem, size_t count, float value) const;
  // What new storage holds: 0, NaN under poison (Context::fresh_value).
  void FillFresh(cl_mem mem) const;

  Context* ctx_;
  std::vector<int> shape_;
  int count_ = 0;
  // Both buffers (a held diff included) hold at least capacity_ elements.
  size_t capacity_ = 0;
  BufferPtr data_;
  mutable BufferPtr diff_;  // null after ReleaseDiff until diff() is asked
  bool diff_on_demand_ = false;  // set_diff_on_demand
  std::string data_read_error_;
  std::string diff_read_error_;
  StorageType storage_type_ = StorageType::kFloat32;
};

}  // namespace dlcaffe
