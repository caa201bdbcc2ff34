#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <string>
#include <vector>

#include "dlcaffe/io.hpp"
#include "dlcaffe/memory_data_layer.hpp"
#include "dlcaffe/net.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string LayerText(int batch, int channels, int height, int width,
                      const std::string& extra = "") {
  return "name: 'input' type: 'MemoryData' phase: TEST memory_data_param { batch_size: " +
         std::to_string(batch) + " channels: " + std::to_string(channels) +
         " height: " + std::to_string(height) + " width: " + std::to_string(width) + " } " + extra;
}

std::unique_ptr<MemoryDataLayer> MakeMemoryLayer(const std::string& text) {
  std::unique_ptr<Layer> layer = MakeLayer(text);
  auto* memory = dynamic_cast<MemoryDataLayer*>(layer.get());
  EXPECT_NE(memory, nullptr);
  layer.release();
  return std::unique_ptr<MemoryDataLayer>(memory);
}

std::vector<float> Values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-3.f, 3.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Pixel j of datum i.
uint8_t PixelOf(int i, int j) { return static_cast<uint8_t>((i * 53 + j * 13) % 256); }

caffe::Datum RawDatum(int i, int channels, int height, int width) {
  caffe::Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  datum.set_label(20 + i);
  std::string pixels(size_t(channels) * height * width, '\0');
  for (size_t j = 0; j < pixels.size(); ++j) pixels[j] = static_cast<char>(PixelOf(i, j));
  datum.set_data(pixels);
  return datum;
}

}  // namespace

TEST(MemoryDataLayer, ResetDeliversBatchesInOrderAndWrapsAround) {
  const int batch = 3, C = 2, H = 3, W = 5, n = 6, size = C * H * W;
  // transform_param does not apply to Reset's arrays, as in Caffe.
  auto layer = MakeMemoryLayer(LayerText(batch, C, H, W, "transform_param { scale: 0.5 }"));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{batch, C, H, W}));
  EXPECT_EQ(label.shape(), (std::vector<int>{batch, 1, 1, 1}));

  std::vector<float> images = Values(n * size, 1), labels = Values(n, 2);
  layer->Reset(images.data(), labels.data(), n);
  const std::vector<float> fed_images = images, fed_labels = labels;
  // The arrays were copied: changing them now changes nothing.
  std::fill(images.begin(), images.end(), 0.f);
  std::fill(labels.begin(), labels.end(), 0.f);
  for (int b = 0; b < 5; ++b) {  // batches 0 1 0 1 0
    layer->Reshape({}, {&data, &label});
    layer->Forward({}, {&data, &label});
    const int first = (b % 2) * batch;
    EXPECT_EQ(data.ReadData(), std::vector<float>(fed_images.begin() + first * size,
                                                  fed_images.begin() + (first + batch) * size))
        << "batch " << b;
    EXPECT_EQ(label.ReadData(),
              std::vector<float>(fed_labels.begin() + first, fed_labels.begin() + first + batch))
        << "batch " << b;
  }

  // A new Reset starts again at its first batch.
  const std::vector<float> more = Values(batch * size, 3), more_labels = {7, 8, 9};
  layer->Reset(more.data(), more_labels.data(), batch);
  layer->Forward({}, {&data, &label});
  EXPECT_EQ(data.ReadData(), more);
  EXPECT_EQ(label.ReadData(), more_labels);
}

TEST(MemoryDataLayer, AddDatumVectorTransformsAsTheDataLayer) {
  // Raw 2 x 6 x 7 datums, centre-cropped to 4 x 4 at TEST, mean and scale.
  const int C = 2, H = 6, W = 7, crop = 4, n = 4;
  auto layer = MakeMemoryLayer(
      LayerText(2, C, crop, crop, "transform_param { crop_size: 4 scale: 0.5 mean_value: 10 }"));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  std::vector<caffe::Datum> datums;
  for (int i = 0; i < n; ++i) datums.push_back(RawDatum(i, C, H, W));
  layer->AddDatumVector(datums);
  EXPECT_EQ(layer->num_images(), n);
  for (int b = 0; b < 3; ++b) {  // batches 0 1 0
    layer->Forward({}, {&data, &label});
    const std::vector<float> got = data.ReadData(), labels = label.ReadData();
    for (int k = 0; k < 2; ++k) {
      const int i = (b % 2) * 2 + k;
      EXPECT_EQ(labels[k], 20 + i);
      for (int c = 0; c < C; ++c)
        for (int h = 0; h < crop; ++h)
          for (int w = 0; w < crop; ++w) {
            const int source = (c * H + 1 + h) * W + 1 + w;  // offsets (6-4)/2, (7-4)/2
            ASSERT_EQ(got[((k * C + c) * crop + h) * crop + w], (PixelOf(i, source) - 10.f) * 0.5f)
                << "batch " << b << " image " << k;
          }
    }
  }
}

TEST(MemoryDataLayer, AddDatumVectorOfFloatAndEncodedDatums) {
  auto layer = MakeMemoryLayer(LayerText(1, 3, 2, 3));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  caffe::Datum float_datum;
  float_datum.set_channels(3);
  float_datum.set_height(2);
  float_datum.set_width(3);
  float_datum.set_label(5);
  const std::vector<float> values = Values(18, 4);
  for (float v : values) float_datum.add_float_data(v);
  layer->AddDatumVector({float_datum});
  layer->Forward({}, {&data, &label});
  EXPECT_EQ(data.ReadData(), values);
  EXPECT_EQ(label.ReadData(), std::vector<float>{5});

  cv::Mat image(2, 3, CV_8UC3);
  for (int j = 0; j < 18; ++j) image.data[j] = PixelOf(9, j);
  std::vector<uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", image, png));
  caffe::Datum encoded;
  encoded.set_encoded(true);
  encoded.set_label(6);
  encoded.set_data(std::string(png.begin(), png.end()));
  layer->AddDatumVector({encoded});
  layer->Forward({}, {&data, &label});
  const std::vector<float> got = data.ReadData();
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w)
        EXPECT_EQ(got[(c * 2 + h) * 3 + w], image.ptr<uint8_t>(h)[w * 3 + c]);
  EXPECT_EQ(label.ReadData(), std::vector<float>{6});
}

TEST(MemoryDataLayer, MirrorsAtTestAsCaffe) {
  // mirror: true flips at random in TEST too; each image comes out either as
  // it is or flipped left-right, and with 16 images both happen.
  const int C = 1, H = 2, W = 5, n = 16;
  TestContext().Seed(3);
  auto layer = MakeMemoryLayer(LayerText(n, C, H, W, "transform_param { mirror: true }"));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  std::vector<caffe::Datum> datums;
  for (int i = 0; i < n; ++i) datums.push_back(RawDatum(i, C, H, W));
  layer->AddDatumVector(datums);
  layer->Forward({}, {&data, &label});
  const std::vector<float> got = data.ReadData();
  int flipped = 0;
  for (int i = 0; i < n; ++i) {
    bool same = true, mirrored = true;
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w) {
        const float v = got[(i * H + h) * W + w];
        same &= v == PixelOf(i, h * W + w);
        mirrored &= v == PixelOf(i, h * W + W - 1 - w);
      }
    EXPECT_TRUE(same || mirrored) << "image " << i;
    flipped += mirrored && !same;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, n);
}

TEST(MemoryDataLayer, SetBatchSize) {
  const int size = 2;
  auto layer = MakeMemoryLayer(LayerText(2, 1, 1, 2));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  const std::vector<float> images = Values(6 * size, 5), labels = {0, 1, 2, 3, 4, 5};
  layer->Reset(images.data(), labels.data(), 6);
  layer->Forward({}, {&data, &label});  // images 0 1
  layer->set_batch_size(3);
  EXPECT_EQ(layer->batch_size(), 3);
  layer->Forward({}, {&data, &label});  // images 2 3 4
  EXPECT_EQ(data.shape(), (std::vector<int>{3, 1, 1, 2}));
  EXPECT_EQ(label.ReadData(), (std::vector<float>{2, 3, 4}));
  layer->Forward({}, {&data, &label});  // a batch across the end: 5 0 1
  EXPECT_EQ(label.ReadData(), (std::vector<float>{5, 0, 1}));
  EXPECT_EQ(data.ReadData(), (std::vector<float>{images[10], images[11], images[0], images[1],
                                                 images[2], images[3]}));
  const std::string error = ErrorOf([&] { layer->set_batch_size(4); });
  EXPECT_NE(error.find("the 6 images fed are not a multiple"), std::string::npos) << error;
}

TEST(MemoryDataLayer, FedThroughANet) {
  caffe::NetParameter param;
  ReadProtoFromTextString(
      "name: 'n' state { phase: TEST } "
      "layer { name: 'input' type: 'MemoryData' top: 'data' top: 'label' "
      "        memory_data_param { batch_size: 2 channels: 1 height: 1 width: 3 } } "
      "layer { name: 'scale' type: 'Power' bottom: 'data' top: 'scaled' "
      "        power_param { scale: 2 } }",
      "net", &param);
  Net net(param, TestContext());
  auto* input = dynamic_cast<MemoryDataLayer*>(net.layer_by_name("input"));
  ASSERT_NE(input, nullptr);
  const std::vector<float> images = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, labels = {0, 1, 2, 3};
  input->Reset(images.data(), labels.data(), 4);
  net.Forward();
  net.Forward();
  EXPECT_EQ(net.blob_by_name("scaled")->ReadData(), (std::vector<float>{14, 16, 18, 20, 22, 24}));
  EXPECT_EQ(net.blob_by_name("label")->ReadData(), (std::vector<float>{2, 3}));
}

TEST(MemoryDataLayer, ClearErrors) {
  Blob data(TestContext()), label(TestContext());
  std::string error = ErrorOf([&] {
    MakeLayer(LayerText(2, 3, 0, 4))->SetUp({}, {&data, &label});
  });
  EXPECT_NE(error.find("layer 'input' (MemoryData): "), std::string::npos) << error;
  EXPECT_NE(error.find("positive batch_size, channels, height and width (got 2, 3, 0, 4)"),
            std::string::npos)
      << error;

  auto layer = MakeMemoryLayer(LayerText(2, 1, 2, 2));
  layer->SetUp({}, {&data, &label});
  error = ErrorOf([&] { layer->Forward({}, {&data, &label}); });
  EXPECT_NE(error.find("no data to deliver: feed it with Reset or AddDatumVector"),
            std::string::npos)
      << error;

  const std::vector<float> images(12, 1.f), labels(3, 0.f);
  error = ErrorOf([&] { layer->Reset(images.data(), labels.data(), 3); });
  EXPECT_NE(error.find("Reset got 3 image(s); give a positive multiple of batch_size 2"),
            std::string::npos)
      << error;
  error = ErrorOf([&] { layer->Reset(images.data(), labels.data(), 0); });
  EXPECT_NE(error.find("Reset got 0 image(s)"), std::string::npos) << error;
  error = ErrorOf([&] { layer->Reset(nullptr, labels.data(), 2); });
  EXPECT_NE(error.find("null"), std::string::npos) << error;
  error = ErrorOf([&] { layer->AddDatumVector({}); });
  EXPECT_NE(error.find("AddDatumVector got 0 image(s)"), std::string::npos) << error;

  error = ErrorOf([&] { layer->AddDatumVector({RawDatum(0, 1, 2, 2), RawDatum(1, 1, 3, 2)}); });
  EXPECT_NE(error.find("datum 1 is 1 x 3 x 2 uint8 but datum 0 is 1 x 2 x 2 uint8"),
            std::string::npos)
      << error;
  error = ErrorOf([&] { layer->AddDatumVector({RawDatum(0, 3, 2, 2), RawDatum(1, 3, 2, 2)}); });
  EXPECT_NE(error.find("datum 0 is 3 x 2 x 2, which transform_param makes 3 x 2 x 2, but "
                       "memory_data_param asks for 1 x 2 x 2"),
            std::string::npos)
      << error;
  caffe::Datum broken = RawDatum(1, 1, 2, 2);
  broken.set_data("xyz");
  error = ErrorOf([&] { layer->AddDatumVector({RawDatum(0, 1, 2, 2), broken}); });
  EXPECT_NE(error.find("datum 1: datum of shape 1 x 2 x 2 should hold 4 bytes"), std::string::npos)
      << error;
  // A refused feed leaves the layer unfed.
  EXPECT_EQ(layer->num_images(), 0);

  error = ErrorOf([&] { MakeLayer(LayerText(2, 1, 2, 2))->SetUp({}, {&data}); });
  EXPECT_NE(error.find("produces 2 top blob(s), got 1"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
