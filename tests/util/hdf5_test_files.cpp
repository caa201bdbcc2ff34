#include "util/hdf5_test_files.hpp"

#include <gtest/gtest.h>

namespace dlcaffe {
namespace test {

void WriteH5(const std::string& path, const std::vector<H5Dataset>& datasets) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (const H5Dataset& d : datasets) {
    const std::vector<hsize_t> dims(d.dims.begin(), d.dims.end());
    const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                     : H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    const hid_t set =
        H5Dcreate2(file, d.name.c_str(), d.type, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(set, 0) << path << " " << d.name;
    // The values go through HDF5's own conversion from double.
    EXPECT_GE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()), 0)
        << path << " " << d.name;
    H5Dclose(set);
    H5Sclose(space);
  }
  H5Pclose(lcpl);
  H5Fclose(file);
}

bool H5Has(const std::string& path, const std::string& name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return false;
  bool has = true;
  for (size_t end = name.find('/'); has; end = name.find('/', end + 1)) {
    has = H5Lexists(file, name.substr(0, end).c_str(), H5P_DEFAULT) > 0;
    if (end == std::string::npos) break;
  }
  H5Fclose(file);
  return has;
}

H5Dataset ReadH5(const std::string& path, const std::string& name) {
  H5Dataset out;
  out.name = name;
  if (!H5Has(path, name)) return out;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t set = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(set);
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(rank);
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  out.dims.assign(dims.begin(), dims.end());
  out.values.resize(H5Sget_simple_extent_npoints(space));
  // The file's type, by kind, for tests that check it.
  const hid_t type = H5Dget_type(set);
  out.type = H5Tget_class(type) == H5T_INTEGER ? H5T_NATIVE_INT
             : H5Tget_size(type) == 8          ? H5T_NATIVE_DOUBLE
                                               : H5T_NATIVE_FLOAT;
  H5Tclose(type);
  if (!out.values.empty()) {
    EXPECT_GE(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()), 0);
  }
  H5Sclose(space);
  H5Dclose(set);
  H5Fclose(file);
  return out;
}

}  // namespace test
}  // namespace dlcaffe
