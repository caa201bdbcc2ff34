#include "host_mirror.hpp"

#include <pybind11/stl.h>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/half_conversion.hpp"

namespace dlcaffe_python {

// Host memory of one mirror; the numpy array's base owns it too, so that the
// array stays valid after the mirror (and the blob) are gone.
using HostMemory = std::vector<float>;

struct HostMirrors::Mirror {
  std::weak_ptr<dlcaffe::Buffer> buffer;
  dlcaffe::Context* context = nullptr;
  // The blob's storage type: a 16-bit blob's values are converted on the
  // way (numpy always sees float32).
  dlcaffe::StorageType type = dlcaffe::StorageType::kFloat32;
  std::shared_ptr<HostMemory> memory;
  py::array array;             // 1 reference here; more when the user holds it
  bool stale = true;           // device work ran since the last download
  bool maybe_written = false;  // handed out since the last upload

  bool alive() const { return !buffer.expired(); }
  bool held() const { return Py_REFCNT(array.ptr()) > 1; }
  size_t bytes() const { return memory->size() * dlcaffe::StorageBytes(type); }
  void Download() {
    if (type == dlcaffe::StorageType::kFloat32) {
      context->Read(buffer.lock()->mem(), 0, bytes(), memory->data());
    } else {
      std::vector<char> stored(bytes());
      context->Read(buffer.lock()->mem(), 0, bytes(), stored.data());
      dlcaffe::StorageToFloats(stored.data(), static_cast<int>(memory->size()), type,
                               memory->data());
    }
    stale = false;
  }
  void Upload() {
    const dlcaffe::BufferPtr target = buffer.lock();
    if (type == dlcaffe::StorageType::kFloat32) {
      context->Write(target->mem(), 0, bytes(), memory->data());
    } else {
      std::vector<char> stored(bytes());
      dlcaffe::FloatsToStorage(memory->data(), static_cast<int>(memory->size()), type,
                               stored.data());
      context->Write(target->mem(), 0, bytes(), stored.data());
    }
    target->MarkWritten();  // layers' copies of weights written from numpy are made again
  }
};

HostMirrors& HostMirrors::Instance() {
  // Never destroyed: arrays may be freed during interpreter shutdown, after
  // static destructors would have run.
  static HostMirrors* instance = new HostMirrors;
  return *instance;
}

py::array HostMirrors::Array(dlcaffe::Blob& blob, bool diff) {
  std::vector<py::ssize_t> shape(blob.shape().begin(), blob.shape().end());
  if (blob.count() == 0) return py::array_t<float>(shape);
  // A memory plan's block (Blob::set_data_read_error / set_diff_read_error).
  const std::string& blocked = diff ? blob.diff_read_error() : blob.data_read_error();
  DLC_REQUIRE(blocked.empty(), blocked);
  if (diff) blob.diff();  // a released diff is allocated again
  const dlcaffe::BufferPtr& buffer = diff ? blob.diff_storage() : blob.data_storage();
  const size_t count = static_cast<size_t>(blob.count());

  auto it = mirrors_.find(buffer.get());
  if (it != mirrors_.end()) {
    Mirror& old = *it->second;
    const bool same_buffer = old.buffer.lock() == buffer;
    if (!same_buffer || old.memory->size() != count || old.type != blob.storage_type()) {
      // A new buffer at a freed one's address, or the blob's count changed:
      // keep what the user wrote (while it fits), then start afresh.
      if (same_buffer && old.maybe_written && !old.stale &&
          old.bytes() <= buffer->bytes())
        old.Upload();
      mirrors_.erase(it);
      it = mirrors_.end();
    }
  }
  if (it == mirrors_.end()) {
    auto mirror = std::make_shared<Mirror>();
    mirror->buffer = buffer;
    mirror->context = &blob.context();
    mirror->type = blob.storage_type();
    mirror->memory = std::make_shared<HostMemory>(count);
    auto* owner = new std::shared_ptr<HostMemory>(mirror->memory);
    py::capsule base(owner, [](void* p) { delete static_cast<std::shared_ptr<HostMemory>*>(p); });
    mirror->array = py::array_t<float>({static_cast<py::ssize_t>(count)},
                                       {static_cast<py::ssize_t>(sizeof(float))},
                                       mirror->memory->data(), base);
    it = mirrors_.emplace(buffer.get(), std::move(mirror)).first;
  }
  Mirror& mirror = *it->second;
  if (mirror.stale) mirror.Download();
  mirror.maybe_written = true;
  return mirror.array.attr("reshape")(py::tuple(py::cast(shape)));
}

void HostMirrors::Prune() {
  for (auto it = mirrors_.begin(); it != mirrors_.end();)
    it = it->second->alive() ? std::next(it) : mirrors_.erase(it);
}

void HostMirrors::Flush() {
  Prune();
  for (auto& [key, mirror] : mirrors_) {
    if (mirror->maybe_written && !mirror->stale) mirror->Upload();
    mirror->maybe_written = false;
  }
}

void HostMirrors::Invalidate() {
  Prune();
  for (auto& [key, mirror] : mirrors_) {
    mirror->stale = true;
    mirror->maybe_written = false;
    if (mirror->held()) {
      mirror->Download();
      mirror->maybe_written = true;
    }
  }
}

DeviceWork::~DeviceWork() {
  try {
    HostMirrors::Instance().Invalidate();
  } catch (...) {
    // A failed download after failed work: the work's own error matters.
  }
}

}  // namespace dlcaffe_python
