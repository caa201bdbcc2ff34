#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dlcaffe/net.hpp"
#include "dlcaffe/net_hdf5.hpp"
#include "util/error_of.hpp"
#include "util/hdf5_test_files.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

// Parameters of odd shapes: a convolution (4-D weights), an inner product,
// and two inner products sharing their weights by name ('w').
const char kNet[] = R"(
  name: 'small'
  layer { name: 'in' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 2 dim: 3 dim: 3 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
          convolution_param { num_output: 3 kernel_size: 2
                              weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'conv1' top: 'ip1'
          inner_product_param { num_output: 5
                                weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } } }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2' param { name: 'w' }
          inner_product_param { num_output: 5
                                weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } } }
  layer { name: 'ip3' type: 'InnerProduct' bottom: 'ip2' top: 'ip3' param { name: 'w' }
          inner_product_param { num_output: 5
                                weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } } }
)";

std::unique_ptr<Net> MakeNet(uint64_t seed) {
  TestContext().Seed(seed);
  return std::make_unique<Net>(NetFromText(kNet, caffe::TEST), TestContext());
}

std::vector<std::vector<float>> Params(const Net& net) {
  std::vector<std::vector<float>> values;
  for (const auto& p : net.params()) values.push_back(p->ReadData());
  return values;
}

std::vector<double> AsDoubles(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

std::vector<uint64_t> DimsOf(const Blob& blob) {
  return std::vector<uint64_t>(blob.shape().begin(), blob.shape().end());
}

}  // namespace

TEST(NetHdf5, SaveWritesCaffesLayoutAndLoadRestoresEveryParameter) {
  const std::string path = TempDir() + "/small.caffemodel.h5";
  auto net = MakeNet(1);
  SaveNetHdf5(*net, path);
  for (const std::string layer : {"conv1", "ip1", "ip2"})
    for (int j = 0; j < 2; ++j) {
      const Blob& blob = *net->layer_by_name(layer)->blobs()[j];
      const H5Dataset d = ReadH5(path, "data/" + layer + "/" + std::to_string(j));
      EXPECT_EQ(d.dims, DimsOf(blob)) << layer << " " << j;
      EXPECT_EQ(d.values, AsDoubles(blob.ReadData())) << layer << " " << j;
      EXPECT_EQ(d.type, H5T_NATIVE_FLOAT);
    }
  // Every layer has its group; a shared parameter is written by its owner only.
  EXPECT_TRUE(H5Has(path, "data/in"));
  EXPECT_FALSE(H5Has(path, "data/ip3/0"));
  EXPECT_TRUE(H5Has(path, "data/ip3/1"));
  EXPECT_FALSE(H5Has(path, "diff"));

  auto other = MakeNet(2);
  ASSERT_NE(Params(*other), Params(*net));
  LoadNetHdf5(*other, path);
  EXPECT_EQ(Params(*other), Params(*net));
}

TEST(NetHdf5, WriteDiffAddsTheGradients) {
  const std::string path = TempDir() + "/diff.h5";
  auto net = MakeNet(3);
  for (const auto& p : net->params()) {
    std::vector<float> diff(p->count());
    for (size_t i = 0; i < diff.size(); ++i) diff[i] = 0.5f * i - 1;
    p->WriteDiff(diff);
  }
  SaveNetHdf5(*net, path, true);
  for (const std::string layer : {"conv1", "ip1", "ip2", "ip3"})
    for (int j = 0; j < 2; ++j) {
      const Blob& blob = *net->layer_by_name(layer)->blobs()[j];
      const H5Dataset d = ReadH5(path, "diff/" + layer + "/" + std::to_string(j));
      EXPECT_EQ(d.dims, DimsOf(blob)) << layer << " " << j;
      EXPECT_EQ(d.values, AsDoubles(blob.ReadDiff())) << layer << " " << j;
    }
  EXPECT_EQ(ReadH5(path, "data/conv1/0").values,
            AsDoubles(net->layer_by_name("conv1")->blobs()[0]->ReadData()));
}

TEST(NetHdf5, CopyTrainedLayersFromReadsHdf5ByItsSignature) {
  const std::string dir = TempDir();
  auto net = MakeNet(4);
  SaveNetHdf5(*net, dir + "/w.caffemodel.h5");
  SaveNetHdf5(*net, dir + "/w.caffemodel");  // HDF5 under a protobuf name
  for (const std::string name : {"/w.caffemodel.h5", "/w.caffemodel"}) {
    auto other = MakeNet(5);
    other->CopyTrainedLayersFrom(dir + name);
    EXPECT_EQ(Params(*other), Params(*net)) << name;
  }
}

TEST(NetHdf5, LayersMissingOnEitherSideAreLeftAlone) {
  const std::string path = TempDir() + "/part.h5";
  auto net = MakeNet(6);
  const Blob& w = *net->layer_by_name("ip1")->blobs()[0];
  const Blob& b = *net->layer_by_name("ip1")->blobs()[1];
  std::vector<double> wv(w.count()), bv(b.count());
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.125 * i;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = -2.0 * i;
  WriteH5(path, {{"data/ip1/0", DimsOf(w), wv},
                 {"data/ip1/1", DimsOf(b), bv},
                 {"data/not_in_net/0", {2}, {1, 2}}});
  const std::vector<float> conv = net->layer_by_name("conv1")->blobs()[0]->ReadData();
  LoadNetHdf5(*net, path);
  EXPECT_EQ(AsDoubles(w.ReadData()), wv);
  EXPECT_EQ(AsDoubles(b.ReadData()), bv);
  EXPECT_EQ(net->layer_by_name("conv1")->blobs()[0]->ReadData(), conv);
}

TEST(NetHdf5, ErrorsNameTheFileLayerAndShapes) {
  const std::string dir = TempDir();
  auto net = MakeNet(7);
  const auto before = Params(*net);
  const std::string good = dir + "/good.h5";
  SaveNetHdf5(*net, good);

  // A shape mismatch in a later layer: nothing is copied.
  const std::string shape = dir + "/shape.h5";
  WriteH5(shape, {{"data/conv1/0", {3, 2, 2, 2}, std::vector<double>(24, 1.0)},
                  {"data/conv1/1", {3}, {1, 2, 3}},
                  {"data/ip1/0", {5, 7}, std::vector<double>(35, 0.0)},
                  {"data/ip1/1", {5}, std::vector<double>(5, 0.0)}});
  std::string what = ErrorOf([&] { LoadNetHdf5(*net, shape); });
  for (const std::string& part :
       std::vector<std::string>{shape, "'ip1'", "param 0", "(5 7)", "(5 12)"})
    EXPECT_NE(what.find(part), std::string::npos) << part << " in: " << what;
  EXPECT_EQ(Params(*net), before);
  // The same through CopyTrainedLayersFrom.
  EXPECT_EQ(ErrorOf([&] { net->CopyTrainedLayersFrom(shape); }), what);

  const std::string many = dir + "/many.h5";
  WriteH5(many, {{"data/conv1/0", {3, 2, 2, 2}, std::vector<double>(24, 1.0)},
                 {"data/conv1/1", {3}, {1, 2, 3}},
                 {"data/conv1/2", {1}, {1}}});
  what = ErrorOf([&] { LoadNetHdf5(*net, many); });
  EXPECT_NE(what.find(many), std::string::npos) << what;
  EXPECT_NE(what.find("incompatible number of blobs for layer 'conv1': 3 in the file, 2"),
            std::string::npos)
      << what;

  // Fewer blobs than the net's, where the missing one is not shared.
  const std::string few = dir + "/few.h5";
  WriteH5(few, {{"data/conv1/0", {3, 2, 2, 2}, std::vector<double>(24, 1.0)}});
  what = ErrorOf([&] { LoadNetHdf5(*net, few); });
  EXPECT_NE(what.find("incompatible number of blobs for layer 'conv1': 1 in the file, 2"),
            std::string::npos)
      << what;

  const std::string other = dir + "/other.h5";
  WriteH5(other, {{"data/fc7/0", {2}, {1, 2}}});
  what = ErrorOf([&] { LoadNetHdf5(*net, other); });
  EXPECT_NE(what.find(other), std::string::npos) << what;
  EXPECT_NE(what.find("'fc7'"), std::string::npos) << what;
  EXPECT_NE(what.find("another net"), std::string::npos) << what;

  const std::string layout = dir + "/layout.h5";
  WriteH5(layout, {{"weights", {2}, {1, 2}}});
  what = ErrorOf([&] { LoadNetHdf5(*net, layout); });
  EXPECT_NE(what.find(layout), std::string::npos) << what;
  EXPECT_NE(what.find("no group 'data'"), std::string::npos) << what;

  what = ErrorOf([&] { LoadNetHdf5(*net, dir + "/missing.h5"); });
  EXPECT_NE(what.find(dir + "/missing.h5"), std::string::npos) << what;
  EXPECT_NE(what.find("does not exist"), std::string::npos) << what;

  what = ErrorOf([&] { SaveNetHdf5(*net, dir + "/no/such/dir/w.h5"); });
  EXPECT_NE(what.find(dir + "/no/such/dir/w.h5"), std::string::npos) << what;
  EXPECT_EQ(Params(*net), before);
}

TEST(NetHdf5, LayerNamesWithSlashesRoundTrip) {
  // GoogLeNet's "inception_3a/1x1": nested groups in the file.
  const std::string text = R"(
    layer { name: 'in' type: 'Input' top: 'data' input_param { shape { dim: 2 dim: 3 } } }
    layer { name: 'inc' type: 'InnerProduct' bottom: 'data' top: 'a'
            inner_product_param { num_output: 2 weight_filler { type: 'gaussian' } } }
    layer { name: 'inc/1x1' type: 'InnerProduct' bottom: 'a' top: 'b'
            inner_product_param { num_output: 3 weight_filler { type: 'gaussian' } } })";
  const std::string path = TempDir() + "/slash.h5";
  TestContext().Seed(8);
  Net net(NetFromText(text, caffe::TEST), TestContext());
  SaveNetHdf5(net, path);
  EXPECT_TRUE(H5Has(path, "data/inc/1x1/0"));
  TestContext().Seed(9);
  Net other(NetFromText(text, caffe::TEST), TestContext());
  LoadNetHdf5(other, path);
  EXPECT_EQ(Params(other), Params(net));
}

}  // namespace test
}  // namespace dlcaffe
