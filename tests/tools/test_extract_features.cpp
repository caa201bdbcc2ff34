// extract_features as in Caffe's walk-through: images -> convert_imageset ->
// compute_image_mean -> a net whose Data layer reads them (mean file, scale)
// -> extract_features. The stored features equal the net's forward passes
// through the Net API and a plain reference computed here; device arguments
// take Caffe's and dlcaffe's forms; mistakes are one clear message.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "dlcaffe/context.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "util/image_dataset.hpp"
#include "util/onnx_model_builder.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kChannels = 3, kHeight = 3, kWidth = 4;  // images resized to this
constexpr int kDim = kChannels * kHeight * kWidth;
constexpr int kOutputs = 3;                              // InnerProduct outputs
constexpr int kBatch = 3, kBatches = 2;                  // 6 features of 4 images
constexpr float kScale = 0.0125f;

float Weight(int output, int input) { return 0.01f * float((output * 13 + input * 5) % 11 - 5); }
float Bias(int output) { return 0.25f * float(output) - 0.3f; }

// The images, their database and mean, a net reading them and its weights.
struct Pipeline {
  std::string dir = TempDir();
  std::string images = dir + "/images";
  std::vector<ListedFile> files = WriteSampleImages(images);
  std::string list = WriteListFile(dir + "/list.txt", files);
  std::string db = dir + "/images_lmdb";
  std::string mean_file = dir + "/mean.binaryproto";
  std::string net = dir + "/features.prototxt";
  std::string weights = dir + "/features.caffemodel";
  caffe::BlobProto mean;

  Pipeline() {
    ToolResult r = RunTool("convert_imageset", "--resize_width=4 --resize_height=3 '" + images +
                                                   "/' " + list + " " + db);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = RunTool("compute_image_mean", db + " " + mean_file);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    ReadProtoFromBinaryFile(mean_file, &mean);
    WriteFileAtomically(net, R"(name: "features"
layer { name: "data" type: "Data" top: "data" top: "label"
  transform_param { scale: )" + std::to_string(kScale) + R"( mean_file: ")" + mean_file + R"(" }
  data_param { source: ")" + db + R"(" batch_size: 3 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param { num_output: 3 } }
)");
    caffe::NetParameter trained;
    caffe::LayerParameter* ip = trained.add_layer();
    ip->set_name("ip");
    ip->set_type("InnerProduct");
    caffe::BlobProto* w = ip->add_blobs();
    w->mutable_shape()->add_dim(kOutputs);
    w->mutable_shape()->add_dim(kDim);
    for (int o = 0; o < kOutputs; ++o)
      for (int i = 0; i < kDim; ++i) w->add_data(Weight(o, i));
    caffe::BlobProto* b = ip->add_blobs();
    b->mutable_shape()->add_dim(kOutputs);
    for (int o = 0; o < kOutputs; ++o) b->add_data(Bias(o));
    WriteProtoToBinaryFile(trained, weights);
  }

  // Feature `index`'s input: image index % 4 (the Data layer wraps around),
  // (pixel - mean) * scale, C × H × W.
  std::vector<float> Input(int index) const {
    const ListedFile& f = files[index % files.size()];
    const std::vector<uint8_t> pixels =
        ChannelMajor(ReadSourceImage(images + "/" + f.path, true, kHeight, kWidth));
    std::vector<float> input(kDim);
    for (int i = 0; i < kDim; ++i) input[i] = (float(pixels[i]) - mean.data(i)) * kScale;
    return input;
  }
};

const Pipeline& ThePipeline() {
  static const Pipeline pipeline;
  return pipeline;
}

std::vector<float> InnerProduct(const std::vector<float>& input) {
  std::vector<float> out(kOutputs);
  for (int o = 0; o < kOutputs; ++o) {
    double sum = Bias(o);
    for (int i = 0; i < kDim; ++i) sum += double(Weight(o, i)) * input[i];
    out[o] = static_cast<float>(sum);
  }
  return out;
}

// extract_features WEIGHTS NET BLOBS DBS kBatches lmdb DEVICE.
ToolResult Extract(const std::string& blobs, const std::string& dbs,
                   const std::string& device = "", const std::string& weights = "",
                   const std::string& batches = std::to_string(kBatches)) {
  const Pipeline& p = ThePipeline();
  return RunTool("extract_features", (weights.empty() ? p.weights : weights) + " " + p.net + " " +
                                         blobs + " " + dbs + " " + batches + " lmdb " + device);
}

std::vector<float> Floats(const caffe::Datum& datum) {
  return std::vector<float>(datum.float_data().begin(), datum.float_data().end());
}

// The same net through the Net API: kBatches forwards, blob `name` per image.
std::vector<std::vector<float>> NetApiFeatures(const std::string& name) {
  const Pipeline& p = ThePipeline();
  Net net(p.net, caffe::TEST, TestContext());
  net.CopyTrainedLayersFrom(p.weights);
  std::vector<std::vector<float>> features;
  for (int b = 0; b < kBatches; ++b) {
    net.Forward();
    const std::vector<float> values = net.blob_by_name(name)->ReadData();
    const size_t dim = values.size() / kBatch;
    for (int n = 0; n < kBatch; ++n)
      features.emplace_back(values.begin() + n * dim, values.begin() + (n + 1) * dim);
  }
  return features;
}

std::string DeviceName(const DeviceInfo& d) {
  return "ocl:" + std::to_string(d.platform_index) + ":" + std::to_string(d.device_index);
}

// Runs extract_features on `device` and checks it stored 3 features of `ip`.
void ExpectRunsOn(const std::string& device) {
  const std::string db = TempDir() + "/ip";
  const ToolResult r = Extract("ip", db, device, "", "1");
  ASSERT_EQ(r.exit_code, 0) << device << ":\n" << r.output;
  EXPECT_EQ(ReadRecords(db).size(), size_t(kBatch)) << device;
}

}  // namespace

TEST(ExtractFeatures, StoresTheNetsBlobsPerImage) {
  const Pipeline& p = ThePipeline();
  const std::string data_db = TempDir() + "/data_features", ip_db = TempDir() + "/ip_features";
  const ToolResult r = Extract("data,ip", data_db + "," + ip_db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Extracted features of 6 query images for feature blob data"))
      << r.output;
  EXPECT_TRUE(Contains(r.output, "Extracted features of 6 query images for feature blob ip"))
      << r.output;
  EXPECT_TRUE(Contains(r.output, "Successfully extracted the features!")) << r.output;

  const std::vector<Record> data = ReadRecords(data_db), ip = ReadRecords(ip_db);
  const auto net_data = NetApiFeatures("data"), net_ip = NetApiFeatures("ip");
  ASSERT_EQ(data.size(), size_t(kBatch * kBatches));
  ASSERT_EQ(ip.size(), size_t(kBatch * kBatches));
  for (int i = 0; i < kBatch * kBatches; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "%010d", i);
    EXPECT_EQ(data[i].key, key);
    EXPECT_EQ(ip[i].key, key);
    // Caffe's shape: the blob's channels x height x width.
    EXPECT_EQ(data[i].datum.channels(), kChannels);
    EXPECT_EQ(data[i].datum.height(), kHeight);
    EXPECT_EQ(data[i].datum.width(), kWidth);
    EXPECT_EQ(ip[i].datum.channels(), kOutputs);
    EXPECT_EQ(ip[i].datum.height(), 1);
    EXPECT_EQ(ip[i].datum.width(), 1);

    EXPECT_EQ(Floats(data[i].datum), net_data[i]) << "feature " << i;
    EXPECT_EQ(Floats(ip[i].datum), net_ip[i]) << "feature " << i;
    const std::vector<float> input = p.Input(i), expected_ip = InnerProduct(input);
    for (int d = 0; d < kDim; ++d)
      EXPECT_NEAR(data[i].datum.float_data(d), input[d], 1e-5) << "feature " << i << " " << d;
    for (int o = 0; o < kOutputs; ++o)
      EXPECT_NEAR(ip[i].datum.float_data(o), expected_ip[o], 1e-4) << "feature " << i << " " << o;
  }
}

TEST(ExtractFeatures, DeviceTakesCaffesAndDlcaffesForms) {
  const std::vector<DeviceInfo> devices = ListDevices();
  bool have_cpu = false, have_gpu = false;
  for (const auto& d : devices) {
    have_cpu |= d.is_cpu();
    have_gpu |= d.is_gpu();
  }
  const std::string tool = "extract_features";
  if (have_cpu) {
    ExpectRunsOn("CPU");
  } else {
    ExpectCleanToolError(Extract("ip", TempDir() + "/ip", "CPU"), tool, "no OpenCL CPU device 0");
  }
  if (have_gpu) {
    ExpectRunsOn("GPU 0");
  } else {
    ExpectCleanToolError(Extract("ip", TempDir() + "/ip", "GPU"), tool, "no OpenCL GPU device 0");
  }
  ExpectRunsOn(DeviceName(TestContext().info()));
  ExpectRunsOn(std::to_string(TestContext().info().flat_index));
  ExpectCleanToolError(Extract("ip", TempDir() + "/ip", "GPU 99"), tool, "no OpenCL GPU device 99");
  ExpectCleanToolError(Extract("ip", TempDir() + "/ip", "ocl:9:9"), tool, "no OpenCL device 'ocl:9:9'");
  ExpectCleanToolError(Extract("ip", TempDir() + "/ip", "CPU 1"), tool, "unexpected argument '1'");
}

// Weights may come from an ONNX model whose layers have the net's names; an
// ONNX net itself has inputs that nothing feeds here.
TEST(ExtractFeatures, WeightsFromAnOnnxModel) {
  OnnxModelBuilder builder;
  builder.Input("x", {kBatch, kDim});
  std::vector<float> w, b;
  for (int o = 0; o < kOutputs; ++o) {
    for (int i = 0; i < kDim; ++i) w.push_back(Weight(o, i));
    b.push_back(Bias(o));
  }
  builder.Initializer("W", {kOutputs, kDim}, w);
  builder.Initializer("B", {kOutputs}, b);
  OnnxModelBuilder::SetInt(builder.Node("Gemm", {"x", "W", "B"}, {"y"}, "ip"), "transB", 1);
  builder.Output("y");
  const std::string onnx = builder.Save(TempDir());

  const std::string from_onnx = TempDir() + "/from_onnx", from_caffe = TempDir() + "/from_caffe";
  ToolResult r = Extract("ip", from_onnx, "", onnx);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = Extract("ip", from_caffe);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Record> a = ReadRecords(from_onnx), c = ReadRecords(from_caffe);
  ASSERT_EQ(a.size(), c.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(Floats(a[i].datum), Floats(c[i].datum)) << i;

  ExpectCleanToolError(RunTool("extract_features", onnx + " " + onnx + " y " + TempDir() +
                                                       "/y 1 lmdb"),
                       "extract_features", "Input layers) that nothing feeds");
}

TEST(ExtractFeatures, UserMistakesAreOneClearMessage) {
  const Pipeline& p = ThePipeline();
  const std::string tool = "extract_features";
  const std::string dir = TempDir();
  ExpectCleanToolError(Extract("data,ip", dir + "/one"), tool,
                       "2 feature blob name(s) (data,ip) but 1 dataset name(s)");
  ExpectCleanToolError(Extract("fc7", dir + "/fc7"), tool,
                       "Unknown feature blob name 'fc7' in the network " + p.net);
  ExpectCleanToolError(Extract("ip,data", dir + "/a," + dir + "/a"), tool,
                       "a dataset name appears twice");
  ExpectCleanToolError(Extract("ip", dir + "/ip", "", "", "two"), tool,
                       "num_mini_batches must be an integer of at least 1, got 'two'");
  ExpectCleanToolError(Extract("ip", dir + "/ip", "", dir + "/missing.caffemodel"), tool,
                       dir + "/missing.caffemodel");
  ExpectCleanToolError(
      RunTool(tool, p.weights + " " + p.net + " ip " + dir + "/ip 1 leveldb"), tool,
      "db_type 'leveldb' is not supported");
  EXPECT_FALSE(std::filesystem::exists(dir + "/ip"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/one"));
  // Caffe never overwrites a dataset.
  ExpectCleanToolError(Extract("ip", p.db), tool, "database " + p.db + " already exists");

  const ToolResult usage = RunTool(tool, p.weights + " " + p.net + " ip");
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_TRUE(Contains(usage.output, "Usage: extract_features  pretrained_net_param"))
      << usage.output;
}

}  // namespace test
}  // namespace dlcaffe
