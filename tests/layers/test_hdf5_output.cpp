#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "dlcaffe/net.hpp"
#include "util/error_of.hpp"
#include "util/hdf5_test_files.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string LayerText(const std::string& file) {
  return "name: 'out' type: 'HDF5Output' bottom: 'data' bottom: 'label' "
         "hdf5_output_param { file_name: '" +
         file + "' }";
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* entry = d ? readdir(d) : nullptr)
    if (entry->d_name[0] != '.') names.push_back(entry->d_name);
  if (d) closedir(d);
  return names;
}

std::vector<double> AsDoubles(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

}  // namespace

TEST(HDF5OutputLayer, WritesEachBatchAsCaffesDataAndLabelDatasets) {
  const std::string dir = TempDir();
  const std::string file = dir + "/out.h5";
  // Setup creates the file afresh, as Caffe, replacing what was there.
  WriteH5(file, {{"old", {1}, {1}}});
  auto layer = MakeLayer(LayerText(file));
  Blob data(TestContext(), {3, 2, 1, 5}), label(TestContext(), {3});
  layer->SetUp({&data, &label}, {});
  EXPECT_FALSE(H5Has(file, "old"));
  EXPECT_FALSE(H5Has(file, "data"));

  for (unsigned seed : {1u, 2u}) {
    FillUniform(&data, -3.f, 3.f, seed);
    FillUniform(&label, 0.f, 10.f, seed + 10);
    layer->Forward({&data, &label}, {});
    // The latest batch replaces the earlier one.
    const H5Dataset d = ReadH5(file, "data"), l = ReadH5(file, "label");
    EXPECT_EQ(d.dims, std::vector<uint64_t>({3, 2, 1, 5}));
    EXPECT_EQ(d.values, AsDoubles(data.ReadData()));
    EXPECT_EQ(d.type, H5T_NATIVE_FLOAT);
    EXPECT_EQ(l.dims, std::vector<uint64_t>({3, 1, 1, 1}));  // Caffe's legacy 4-D shape
    EXPECT_EQ(l.values, AsDoubles(label.ReadData()));
  }
  // Written through a temporary file renamed into place: nothing else left.
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>({"out.h5"}));
}

TEST(HDF5OutputLayer, BlobsOfMoreThanFourAxesKeepTheirShape) {
  const std::string file = TempDir() + "/out5.h5";
  auto layer = MakeLayer(LayerText(file));
  Blob data(TestContext(), {2, 1, 3, 1, 2}), label(TestContext(), {2, 2});
  FillUniform(&data, -1.f, 1.f, 5);
  FillUniform(&label, -1.f, 1.f, 6);
  layer->SetUp({&data, &label}, {});
  layer->Forward({&data, &label}, {});
  EXPECT_EQ(ReadH5(file, "data").dims, std::vector<uint64_t>({2, 1, 3, 1, 2}));
  EXPECT_EQ(ReadH5(file, "data").values, AsDoubles(data.ReadData()));
  EXPECT_EQ(ReadH5(file, "label").dims, std::vector<uint64_t>({2, 2, 1, 1}));
}

TEST(HDF5OutputLayer, RoundTripThroughHDF5DataInANet) {
  const std::string dir = TempDir();
  H5Dataset data{"data", {4, 3}, {}}, label{"label", {4}, {5, 6, 7, 8}, H5T_NATIVE_INT};
  for (int i = 0; i < 12; ++i) data.values.push_back(i * 0.25 - 1);
  WriteH5(dir + "/in.h5", {data, label});
  std::ofstream(dir + "/list.txt") << dir + "/in.h5\n";
  Net net(NetFromText("layer { name: 'in' type: 'HDF5Data' top: 'data' top: 'label' "
                      "hdf5_data_param { source: '" +
                          dir +
                          "/list.txt' batch_size: 4 } }"
                          "layer { name: 'out' type: 'HDF5Output' bottom: 'data' bottom: 'label' "
                          "hdf5_output_param { file_name: '" +
                          dir + "/out.h5' } }",
                      caffe::TEST),
          TestContext());
  net.Forward();
  const H5Dataset d = ReadH5(dir + "/out.h5", "data"), l = ReadH5(dir + "/out.h5", "label");
  EXPECT_EQ(d.dims, std::vector<uint64_t>({4, 3, 1, 1}));
  EXPECT_EQ(d.values, data.values);
  EXPECT_EQ(l.values, label.values);
}

TEST(HDF5OutputLayer, Errors) {
  const std::string dir = TempDir();
  Blob data(TestContext(), {3, 2}), label(TestContext(), {2});
  std::string what = ErrorOf([&] { MakeLayer(LayerText(""))->SetUp({&data, &label}, {}); });
  EXPECT_NE(what.find("layer 'out' (HDF5Output)"), std::string::npos) << what;
  EXPECT_NE(what.find("file_name"), std::string::npos) << what;

  what = ErrorOf([&] {
    MakeLayer(LayerText(dir + "/no/such/dir/o.h5"))->SetUp({&data, &label}, {});
  });
  EXPECT_NE(what.find("layer 'out'"), std::string::npos) << what;
  EXPECT_NE(what.find(dir + "/no/such/dir/o.h5"), std::string::npos) << what;

  what = ErrorOf([&] { MakeLayer(LayerText(dir + "/o.h5"))->SetUp({&data, &label}, {}); });
  EXPECT_NE(what.find("layer 'out'"), std::string::npos) << what;
  EXPECT_NE(what.find("3 2"), std::string::npos) << what;
}

}  // namespace test
}  // namespace dlcaffe
