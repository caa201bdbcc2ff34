#include "core/hdf5_file.hpp"

#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

namespace dlcaffe {

Hdf5Handle& Hdf5Handle::operator=(Hdf5Handle&& other) noexcept {
  if (this != &other) {
    Reset();
    id_ = other.id_;
    close_ = other.close_;
    other.id_ = -1;
  }
  return *this;
}

void Hdf5Handle::Reset() {
  if (id_ >= 0 && close_) close_(id_);
  id_ = -1;
}

Hdf5Quiet::Hdf5Quiet() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Hdf5Quiet::~Hdf5Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

namespace {

// The innermost description on HDF5's error stack (the most specific one,
// e.g. "unable to lock file, errno = 11"), for the Error.
herr_t KeepInnermost(unsigned, const H5E_error2_t* error, void* out) {
  if (error->desc) *static_cast<std::string*>(out) = error->desc;
  return 0;
}

std::string Hdf5ErrorText() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, KeepInnermost, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? "" : " (HDF5: " + text + ")";
}

template <typename Id>
Id Check(Id id, const std::string& what) {
  DLC_REQUIRE(id >= 0, what << Hdf5ErrorText());
  return id;
}

Hdf5Handle OpenDataset(hid_t loc, const std::string& name) {
  DLC_REQUIRE(Hdf5HasLink(loc, name), "no dataset '" << name << "'");
  return Hdf5Handle(
      Check(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), "cannot open dataset '" + name + "'"),
      H5Dclose);
}

std::vector<uint64_t> DimsOf(hid_t dataset, const std::string& name) {
  Hdf5Handle space(Check(H5Dget_space(dataset), "cannot read the shape of dataset '" + name + "'"),
                   H5Sclose);
  const int rank = Check(H5Sget_simple_extent_ndims(space.get()),
                         "cannot read the shape of dataset '" + name + "'");
  std::vector<hsize_t> dims(rank);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<uint64_t>(dims.begin(), dims.end());
}

// Elements of `dims`, or an Error past what a vector of floats may hold.
size_t CountOf(const std::vector<uint64_t>& dims, const std::string& name) {
  uint64_t count = 1;
  for (uint64_t d : dims) {
    DLC_REQUIRE(d == 0 || count <= uint64_t(INT_MAX) / d,
                "dataset '" << name << "' has more than " << INT_MAX << " values");
    count *= d;
  }
  return static_cast<size_t>(count);
}

H5T_class_t ClassOf(hid_t dataset, const std::string& name) {
  Hdf5Handle type(Check(H5Dget_type(dataset), "cannot read the type of dataset '" + name + "'"),
                  H5Tclose);
  return H5Tget_class(type.get());
}

}  // namespace

bool IsHdf5Path(const std::string& path) {
  if (!FileExists(path)) return false;
  Hdf5Quiet quiet;
  const htri_t is = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return is > 0;
}

Hdf5Handle OpenHdf5File(const std::string& path) {
  Hdf5Quiet quiet;
  DLC_REQUIRE(FileExists(path), "cannot open HDF5 file " << path << ": it does not exist");
  DLC_REQUIRE(IsHdf5Path(path), "cannot open HDF5 file " << path << ": it is not an HDF5 file");
  return Hdf5Handle(
      Check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "cannot open HDF5 file " + path),
      H5Fclose);
}

bool Hdf5HasLink(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  if (name.empty()) return false;
  // H5Lexists fails, rather than answering false, when a step is missing.
  size_t end = 0;
  do {
    end = name.find('/', end + 1);
    const std::string step = name.substr(0, end);
    if (H5Lexists(loc, step.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  } while (end != std::string::npos);
  return true;
}

Hdf5Handle OpenHdf5Group(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  DLC_REQUIRE(Hdf5HasLink(loc, name), "no group '" << name << "'");
  return Hdf5Handle(
      Check(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), "'" + name + "' is not a group"), H5Gclose);
}

namespace {

herr_t AddLinkName(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> Hdf5LinkNames(hid_t group) {
  Hdf5Quiet quiet;
  std::vector<std::string> names;
  Check(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr, AddLinkName, &names),
        "cannot list a group's members");
  return names;
}

std::vector<uint64_t> Hdf5DatasetDims(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  Hdf5Handle dataset = OpenDataset(loc, name);
  return DimsOf(dataset.get(), name);
}

Hdf5Floats ReadHdf5Floats(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  Hdf5Handle dataset = OpenDataset(loc, name);
  const H5T_class_t type_class = ClassOf(dataset.get(), name);
  DLC_REQUIRE(type_class == H5T_FLOAT || type_class == H5T_INTEGER,
              "dataset '" << name << "' does not hold numbers (HDF5 type class " << type_class
                          << "); give it an integer or floating-point type");
  Hdf5Floats out;
  out.dims = DimsOf(dataset.get(), name);
  out.values.resize(CountOf(out.dims, name));
  if (!out.values.empty())
    Check(
        H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()),
        "cannot read dataset '" + name + "'");
  return out;
}

int ReadHdf5Int(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  Hdf5Handle dataset = OpenDataset(loc, name);
  DLC_REQUIRE(ClassOf(dataset.get(), name) == H5T_INTEGER &&
                  CountOf(DimsOf(dataset.get(), name), name) == 1,
              "dataset '" << name << "' is not one integer");
  int value = 0;
  Check(H5Dread(dataset.get(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value),
        "cannot read dataset '" + name + "'");
  return value;
}

std::string ReadHdf5String(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  Hdf5Handle dataset = OpenDataset(loc, name);
  Hdf5Handle type(Check(H5Dget_type(dataset.get()), "cannot read the type of '" + name + "'"),
                  H5Tclose);
  DLC_REQUIRE(
      H5Tget_class(type.get()) == H5T_STRING && CountOf(DimsOf(dataset.get(), name), name) == 1,
      "dataset '" << name << "' is not one string");
  Hdf5Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(memory.get(), H5T_VARIABLE);
    char* text = nullptr;
    Check(H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text),
          "cannot read dataset '" + name + "'");
    std::string value = text ? text : "";
    H5free_memory(text);
    return value;
  }
  const size_t size = H5Tget_size(type.get());
  H5Tset_size(memory.get(), size);
  std::vector<char> text(size + 1, '\0');
  Check(H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()),
        "cannot read dataset '" + name + "'");
  return std::string(text.data(), strnlen(text.data(), size));
}

std::string ReadHdf5Bytes(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  Hdf5Handle dataset = OpenDataset(loc, name);
  const std::vector<uint64_t> dims = DimsOf(dataset.get(), name);
  DLC_REQUIRE(ClassOf(dataset.get(), name) == H5T_INTEGER && dims.size() == 1,
              "dataset '" << name << "' is not a list of bytes");
  std::string bytes(CountOf(dims, name), '\0');
  if (!bytes.empty())
    Check(H5Dread(dataset.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, &bytes[0]),
          "cannot read dataset '" + name + "'");
  return bytes;
}

Hdf5MemoryFile::Hdf5MemoryFile() {
  Hdf5Quiet quiet;
  lcpl_ = Hdf5Handle(Check(H5Pcreate(H5P_LINK_CREATE), "cannot start an HDF5 file"), H5Pclose);
  Check(H5Pset_create_intermediate_group(lcpl_.get(), 1), "cannot start an HDF5 file");
  Hdf5Handle fapl(Check(H5Pcreate(H5P_FILE_ACCESS), "cannot start an HDF5 file"), H5Pclose);
  // In memory only (no backing store): Save writes the image. The name only
  // tells files apart, and must be unique among those open at once.
  Check(H5Pset_fapl_core(fapl.get(), 1 << 20, 0), "cannot start an HDF5 file");
  static std::atomic<unsigned> counter{0};
  const std::string name =
      "dlcaffe-memory-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".h5";
  file_ = Hdf5Handle(Check(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                           "cannot start an HDF5 file in memory"),
                     H5Fclose);
}

Hdf5Handle Hdf5MemoryFile::CreateGroup(hid_t loc, const std::string& name) {
  Hdf5Quiet quiet;
  // An intermediate group made for an earlier nested name may exist already.
  if (Hdf5HasLink(loc, name)) return OpenHdf5Group(loc, name);
  return Hdf5Handle(Check(H5Gcreate2(loc, name.c_str(), lcpl_.get(), H5P_DEFAULT, H5P_DEFAULT),
                          "cannot create group '" + name + "'"),
                    H5Gclose);
}

namespace {

void WriteDataset(hid_t loc, const std::string& name, hid_t lcpl, hid_t file_type,
                  hid_t memory_type, hid_t space, const void* values) {
  Hdf5Handle dataset(
      Check(H5Dcreate2(loc, name.c_str(), file_type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT),
            "cannot create dataset '" + name + "'"),
      H5Dclose);
  // An empty dataset (a dimension of 0) has nothing to write.
  if (H5Sget_simple_extent_npoints(space) > 0)
    Check(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
          "cannot write dataset '" + name + "'");
}

Hdf5Handle SimpleSpace(const std::vector<uint64_t>& dims) {
  if (dims.empty())
    return Hdf5Handle(Check(H5Screate(H5S_SCALAR), "cannot make a shape"), H5Sclose);
  const std::vector<hsize_t> h(dims.begin(), dims.end());
  return Hdf5Handle(
      Check(H5Screate_simple(static_cast<int>(h.size()), h.data(), nullptr), "cannot make a shape"),
      H5Sclose);
}

}  // namespace

void Hdf5MemoryFile::WriteFloats(hid_t loc, const std::string& name,
                                 const std::vector<uint64_t>& dims, const float* values) {
  Hdf5Quiet quiet;
  Hdf5Handle space = SimpleSpace(dims);
  WriteDataset(loc, name, lcpl_.get(), H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, space.get(), values);
}

void Hdf5MemoryFile::WriteInt(hid_t loc, const std::string& name, int value) {
  Hdf5Quiet quiet;
  Hdf5Handle space = SimpleSpace({1});
  WriteDataset(loc, name, lcpl_.get(), H5T_STD_I32LE, H5T_NATIVE_INT, space.get(), &value);
}

void Hdf5MemoryFile::WriteString(hid_t loc, const std::string& name, const std::string& value) {
  Hdf5Quiet quiet;
  Hdf5Handle type(Check(H5Tcopy(H5T_C_S1), "cannot make a string type"), H5Tclose);
  Check(H5Tset_size(type.get(), value.size() + 1), "cannot make a string type");
  Check(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), "cannot make a string type");
  Hdf5Handle space = SimpleSpace({});
  WriteDataset(loc, name, lcpl_.get(), type.get(), type.get(), space.get(), value.c_str());
}

void Hdf5MemoryFile::WriteBytes(hid_t loc, const std::string& name, const std::string& bytes) {
  Hdf5Quiet quiet;
  Hdf5Handle space = SimpleSpace({bytes.size()});
  WriteDataset(loc, name, lcpl_.get(), H5T_STD_U8LE, H5T_NATIVE_UCHAR, space.get(), bytes.data());
}

void Hdf5MemoryFile::Save(const std::string& path) {
  std::string image;
  {
    Hdf5Quiet quiet;
    Check(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "cannot write " + path);
    const ssize_t size = Check(H5Fget_file_image(file_.get(), nullptr, 0), "cannot write " + path);
    image.resize(static_cast<size_t>(size));
    Check(H5Fget_file_image(file_.get(), &image[0], image.size()), "cannot write " + path);
  }
  WriteFileAtomically(path, image);
}

}  // namespace dlcaffe
