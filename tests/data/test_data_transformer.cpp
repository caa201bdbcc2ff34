#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dlcaffe/data/data_transformer.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

caffe::TransformationParameter Param(const std::string& text) {
  caffe::TransformationParameter param;
  ReadProtoFromTextString(text, "test", &param);
  return param;
}

// A batch of `num` images with seeded pixel values and labels 10 + i; crops
// are drawn by `transformer` from `rng`.
HostImageBatch MakeBatch(int num, int channels, int height, int width, bool is_float,
                         const DataTransformer& transformer, Rng& rng, unsigned seed) {
  std::mt19937 values(seed);
  HostImageBatch batch;
  batch.Reset(num, channels, height, width, is_float);
  for (int n = 0; n < num; ++n) {
    DatumImage image;
    image.channels = channels;
    image.height = height;
    image.width = width;
    image.is_float = is_float;
    image.label = 10 + n;
    for (size_t i = 0; i < image.count(); ++i) {
      if (is_float) {
        image.floats.push_back(std::uniform_real_distribution<float>(-50.f, 300.f)(values));
      } else {
        image.bytes.push_back(static_cast<uint8_t>(values() % 256));
      }
    }
    batch.SetImage(n, image);
    batch.SetCrop(n, transformer.Draw(height, width, rng));
  }
  return batch;
}

// Caffe's DataTransformer::Transform(const Datum&) as a plain loop. `mean`
// is empty, one value per channel, or a C×H×W image.
std::vector<float> Reference(const HostImageBatch& batch, int crop, float scale,
                             const std::vector<float>& mean, bool mean_is_image) {
  const int C = batch.channels(), H = batch.height(), W = batch.width();
  const int ch = crop ? crop : H, cw = crop ? crop : W;
  std::vector<float> out;
  for (int n = 0; n < batch.num(); ++n) {
    const ImageCrop c = batch.crop(n);
    for (int k = 0; k < C; ++k)
      for (int h = 0; h < ch; ++h)
        for (int w = 0; w < cw; ++w) {
          const int sw = c.mirror ? cw - 1 - w : w;
          const int source = (k * H + c.h_off + h) * W + c.w_off + sw;
          float v = batch.pixel(n, source);
          if (!mean.empty()) v -= mean_is_image ? mean[source] : mean[k];
          out.push_back(v * scale);
        }
  }
  return out;
}

// Uploads the batch as the Data layer does and runs the transform.
std::vector<float> RunOnDevice(DataTransformer& transformer, const HostImageBatch& batch,
                               Blob* top) {
  Context& ctx = TestContext();
  BufferPtr device = ctx.Allocate(batch.bytes());
  ctx.Write(device->mem(), 0, batch.bytes(), batch.data());
  transformer.Transform(batch, device->mem(), top);
  return top->ReadData();
}

void ExpectAllNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_FLOAT_EQ(got[i], want[i]) << "element " << i;
}

}  // namespace

TEST(DataTransformer, ScaleOnly) {
  DataTransformer transformer(Param("scale: 0.00390625"), caffe::TRAIN, TestContext());
  Rng rng(1);
  const HostImageBatch batch = MakeBatch(3, 1, 13, 7, false, transformer, rng, 5);
  Blob top(TestContext());
  const std::vector<float> got = RunOnDevice(transformer, batch, &top);
  EXPECT_EQ(top.shape(), (std::vector<int>{3, 1, 13, 7}));
  ExpectAllNear(got, Reference(batch, 0, 0.00390625f, {}, false));
}

TEST(DataTransformer, MeanValuePerChannelAndSingle) {
  {
    DataTransformer transformer(Param("scale: 0.5 mean_value: 104 mean_value: 117 "
                                      "mean_value: 123"),
                                caffe::TEST, TestContext());
    Rng rng(2);
    const HostImageBatch batch = MakeBatch(2, 3, 5, 3, false, transformer, rng, 6);
    Blob top(TestContext());
    ExpectAllNear(RunOnDevice(transformer, batch, &top),
                  Reference(batch, 0, 0.5f, {104.f, 117.f, 123.f}, false));
  }
  {
    DataTransformer transformer(Param("mean_value: 127.5"), caffe::TEST, TestContext());
    Rng rng(3);
    const HostImageBatch batch = MakeBatch(1, 3, 4, 4, false, transformer, rng, 7);
    Blob top(TestContext());
    ExpectAllNear(RunOnDevice(transformer, batch, &top),
                  Reference(batch, 0, 1.f, {127.5f, 127.5f, 127.5f}, false));
  }
}

TEST(DataTransformer, MeanFileWithCenterCropAtTest) {
  const int C = 3, H = 7, W = 9, crop = 5;
  caffe::BlobProto proto;  // legacy 4-D fields, as Caffe's compute_image_mean writes
  proto.set_num(1);
  proto.set_channels(C);
  proto.set_height(H);
  proto.set_width(W);
  std::vector<float> mean;
  for (int i = 0; i < C * H * W; ++i) {
    mean.push_back(static_cast<float>(i % 17) * 3.5f);
    proto.add_data(mean.back());
  }
  const std::string mean_file = TempDir() + "/mean.binaryproto";
  WriteProtoToBinaryFile(proto, mean_file);

  // TEST takes the centre crop; as in Caffe, mirror: true still flips at
  // random in TEST.
  DataTransformer transformer(Param("scale: 0.25 crop_size: 5 mirror: true mean_file: '" +
                                    mean_file + "'"),
                              caffe::TEST, TestContext());
  Rng rng(4);
  const int num = 13;
  const HostImageBatch batch = MakeBatch(num, C, H, W, false, transformer, rng, 8);
  int mirrored = 0;
  for (int n = 0; n < num; ++n) {
    EXPECT_EQ(batch.crop(n).h_off, 1);
    EXPECT_EQ(batch.crop(n).w_off, 2);
    mirrored += batch.crop(n).mirror;
  }
  EXPECT_GT(mirrored, 0);
  EXPECT_LT(mirrored, num);
  Blob top(TestContext());
  const std::vector<float> got = RunOnDevice(transformer, batch, &top);
  EXPECT_EQ(top.shape(), (std::vector<int>{num, C, crop, crop}));
  ExpectAllNear(got, Reference(batch, crop, 0.25f, mean, true));
}

TEST(DataTransformer, TestPhaseWithoutMirrorDrawsNothing) {
  // The centre crop, never flipped, and the generator left alone.
  DataTransformer transformer(Param("crop_size: 3"), caffe::TEST, TestContext());
  Rng rng(8), untouched(8);
  for (int i = 0; i < 10; ++i) {
    const ImageCrop c = transformer.Draw(8, 5, rng);
    EXPECT_EQ(c.h_off, 2);
    EXPECT_EQ(c.w_off, 1);
    EXPECT_FALSE(c.mirror);
  }
  EXPECT_EQ(rng, untouched);
}

TEST(DataTransformer, RandomCropAndMirrorAtTrain) {
  const int H = 6, W = 11, crop = 4;
  DataTransformer transformer(Param("crop_size: 4 mirror: true mean_value: 10"),
                              caffe::TRAIN, TestContext());
  Rng rng(5);
  const HostImageBatch batch = MakeBatch(13, 2, H, W, false, transformer, rng, 9);
  int mirrored = 0;
  bool h_moved = false, w_moved = false;
  for (int n = 0; n < batch.num(); ++n) {
    const ImageCrop c = batch.crop(n);
    EXPECT_GE(c.h_off, 0);
    EXPECT_LE(c.h_off, H - crop);
    EXPECT_GE(c.w_off, 0);
    EXPECT_LE(c.w_off, W - crop);
    mirrored += c.mirror;
    h_moved |= c.h_off != batch.crop(0).h_off;
    w_moved |= c.w_off != batch.crop(0).w_off;
  }
  // With this seed the 13 draws cover both flips and several windows, so the
  // kernel's crop and mirror arithmetic is exercised.
  EXPECT_GT(mirrored, 0);
  EXPECT_LT(mirrored, batch.num());
  EXPECT_TRUE(h_moved);
  EXPECT_TRUE(w_moved);
  Blob top(TestContext());
  ExpectAllNear(RunOnDevice(transformer, batch, &top),
                Reference(batch, crop, 1.f, {10.f, 10.f}, false));
}

TEST(DataTransformer, FloatPixels) {
  DataTransformer transformer(Param("scale: 2 crop_size: 3 mirror: true mean_value: 1.5"),
                              caffe::TRAIN, TestContext());
  Rng rng(6);
  const HostImageBatch batch = MakeBatch(4, 1, 3, 5, true, transformer, rng, 10);
  Blob top(TestContext());
  ExpectAllNear(RunOnDevice(transformer, batch, &top), Reference(batch, 3, 2.f, {1.5f}, false));
}

TEST(DataTransformer, DrawsAreReproducibleFromTheSeed) {
  DataTransformer transformer(Param("crop_size: 3 mirror: true"), caffe::TRAIN, TestContext());
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 20; ++i) {
    const ImageCrop x = transformer.Draw(10, 12, a), y = transformer.Draw(10, 12, b);
    const ImageCrop z = transformer.Draw(10, 12, c);
    EXPECT_EQ(x.h_off, y.h_off);
    EXPECT_EQ(x.w_off, y.w_off);
    EXPECT_EQ(x.mirror, y.mirror);
    differs |= x.h_off != z.h_off || x.w_off != z.w_off || x.mirror != z.mirror;
  }
  EXPECT_TRUE(differs);
  // Nothing random to draw: the generator is left alone, as in Caffe.
  DataTransformer plain(Param("scale: 3"), caffe::TRAIN, TestContext());
  Rng d(7), untouched(7);
  plain.Draw(10, 12, d);
  EXPECT_EQ(d, untouched);
}

TEST(DataTransformer, ClearErrors) {
  DataTransformer crop(Param("crop_size: 8"), caffe::TEST, TestContext());
  std::string error = ErrorOf([&] { crop.CheckInput(1, 7, 9); });
  EXPECT_NE(error.find("crop_size 8 is larger than the 7 x 9 images"), std::string::npos)
      << error;

  DataTransformer means(Param("mean_value: 1 mean_value: 2"), caffe::TEST, TestContext(),
                        "layer 'd' (Data): ");
  error = ErrorOf([&] { means.CheckInput(3, 4, 4); });
  EXPECT_NE(error.find("layer 'd' (Data): "), std::string::npos) << error;
  EXPECT_NE(error.find("got 2 for images of 3 channel(s)"), std::string::npos) << error;

  caffe::BlobProto proto;
  proto.mutable_shape()->add_dim(1);
  proto.mutable_shape()->add_dim(2);
  proto.mutable_shape()->add_dim(2);
  for (int i = 0; i < 4; ++i) proto.add_data(1.f);
  const std::string mean_file = TempDir() + "/mean.binaryproto";
  WriteProtoToBinaryFile(proto, mean_file);
  DataTransformer mean_image(Param("mean_file: '" + mean_file + "'"), caffe::TEST,
                             TestContext());
  mean_image.CheckInput(1, 2, 2);
  error = ErrorOf([&] { mean_image.CheckInput(1, 3, 2); });
  EXPECT_NE(error.find(mean_file), std::string::npos) << error;
  EXPECT_NE(error.find("is 1 x 2 x 2 but the images are 1 x 3 x 2"), std::string::npos)
      << error;

  const std::string missing = TempDir() + "/no_such_mean.binaryproto";
  error = ErrorOf([&] {
    DataTransformer(Param("mean_file: '" + missing + "'"), caffe::TEST, TestContext());
  });
  EXPECT_NE(error.find(missing), std::string::npos) << error;

  error = ErrorOf([&] {
    DataTransformer(Param("mean_file: '" + mean_file + "' mean_value: 3"), caffe::TEST,
                    TestContext());
  });
  EXPECT_NE(error.find("both mean_file and mean_value"), std::string::npos) << error;

  error = ErrorOf([&] {
    DataTransformer(Param("force_color: true force_gray: true"), caffe::TEST, TestContext());
  });
  EXPECT_NE(error.find("force_color and force_gray"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
