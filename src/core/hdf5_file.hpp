// The library's side of the HDF5 C API, shared by the HDF5 layers, the net's
// HDF5 weights and the solver's HDF5 snapshots: handles that close
// themselves, HDF5's own error printing silenced (failures become one
// dlcaffe::Error), datasets read as float whatever their numeric type, and
// files built in memory and then written atomically (WriteFileAtomically),
// so that a crash never leaves half a file. Private: the public headers stay
// free of HDF5.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlcaffe {

// An HDF5 identifier, closed with its kind's close function.
class Hdf5Handle {
 public:
  using Close = herr_t (*)(hid_t);
  Hdf5Handle() = default;
  Hdf5Handle(hid_t id, Close close) : id_(id), close_(close) {}
  ~Hdf5Handle() { Reset(); }
  Hdf5Handle(Hdf5Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept;
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void Reset();

 private:
  hid_t id_ = -1;
  Close close_ = nullptr;
};

// While alive, HDF5 prints no error stack on this thread (a threadsafe
// HDF5 keeps that setting per thread): callers turn failures into Errors.
class Hdf5Quiet {
 public:
  Hdf5Quiet();
  ~Hdf5Quiet();
  Hdf5Quiet(const Hdf5Quiet&) = delete;
  Hdf5Quiet& operator=(const Hdf5Quiet&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// Whether `path` is an HDF5 file (false where it is missing or unreadable).
bool IsHdf5Path(const std::string& path);

// Opens an existing file read-only; the Error names it. This and the
// functions below print nothing: their failures are Errors (naming the
// dataset or group, not the file: callers add it).
Hdf5Handle OpenHdf5File(const std::string& path);

// Whether `loc` has a link `name` (a '/'-separated path whose every step must
// exist; a missing step is false, not an error).
bool Hdf5HasLink(hid_t loc, const std::string& name);
Hdf5Handle OpenHdf5Group(hid_t loc, const std::string& name);
// The names of the links directly in `group`, in name order.
std::vector<std::string> Hdf5LinkNames(hid_t group);

// The dimensions of dataset `name` (empty for a scalar), without reading it.
std::vector<uint64_t> Hdf5DatasetDims(hid_t loc, const std::string& name);

// A dataset's values as float (integer and floating-point datasets are
// converted, as Caffe reads them), in C order.
struct Hdf5Floats {
  std::vector<uint64_t> dims;
  std::vector<float> values;
};
Hdf5Floats ReadHdf5Floats(hid_t loc, const std::string& name);
int ReadHdf5Int(hid_t loc, const std::string& name);
// A fixed- or variable-length string (Caffe's and h5py's), or bytes.
std::string ReadHdf5String(hid_t loc, const std::string& name);
std::string ReadHdf5Bytes(hid_t loc, const std::string& name);

// An HDF5 file built in memory; Save writes it to disk atomically.
class Hdf5MemoryFile {
 public:
  Hdf5MemoryFile();
  hid_t root() const { return file_.get(); }
  // `name` may be a '/'-separated path: missing groups on the way are
  // created (a Caffe layer named "inception_3a/1x1" becomes nested groups).
  Hdf5Handle CreateGroup(hid_t loc, const std::string& name);
  // A float dataset of shape `dims` (empty: a scalar).
  void WriteFloats(hid_t loc, const std::string& name, const std::vector<uint64_t>& dims,
                   const float* values);
  // Caffe's hdf5_save_int: a 1-D dataset of one int.
  void WriteInt(hid_t loc, const std::string& name, int value);
  // Caffe's hdf5_save_string: a scalar fixed-length, null-terminated string.
  void WriteString(hid_t loc, const std::string& name, const std::string& value);
  // A 1-D dataset of bytes.
  void WriteBytes(hid_t loc, const std::string& name, const std::string& bytes);
  // Writes the file to `path` (temporary file, then rename).
  void Save(const std::string& path);

 private:
  Hdf5Handle lcpl_;  // link creation: intermediate groups
  Hdf5Handle file_;
};

}  // namespace dlcaffe
