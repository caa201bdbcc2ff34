// HDF5 files for tests, written and read with the HDF5 C API directly (not
// through the library), so that a test checks the library against the
// format itself.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlcaffe {
namespace test {

struct H5Dataset {
  std::string name;  // may be a path: "data/conv1/0" (groups are created)
  std::vector<uint64_t> dims;
  std::vector<double> values;     // converted to `type` on writing
  hid_t type = H5T_NATIVE_FLOAT;  // H5T_NATIVE_FLOAT, _DOUBLE, _INT, ...
};

// Creates `path` (replacing it) holding `datasets`; fails the test on error.
void WriteH5(const std::string& path, const std::vector<H5Dataset>& datasets);

// Dataset `name` of `path` as doubles (empty dims and values if missing);
// `type` tells the file's kind: H5T_NATIVE_INT, _FLOAT (4 bytes) or _DOUBLE.
H5Dataset ReadH5(const std::string& path, const std::string& name);

// Whether `path` has a link `name`.
bool H5Has(const std::string& path, const std::string& name);

}  // namespace test
}  // namespace dlcaffe
