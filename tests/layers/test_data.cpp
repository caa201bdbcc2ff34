#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "dlcaffe/data/data_state.hpp"
#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}

// Pixel j of record i.
uint8_t PixelOf(int i, int j) { return static_cast<uint8_t>((i * 29 + j * 7) % 256); }

caffe::Datum RawDatum(int i, int channels, int height, int width) {
  caffe::Datum datum;
  datum.set_channels(channels);
  datum.set_height(height);
  datum.set_width(width);
  datum.set_label(100 + i);
  std::string pixels(size_t(channels) * height * width, '\0');
  for (size_t j = 0; j < pixels.size(); ++j) pixels[j] = static_cast<char>(PixelOf(i, j));
  datum.set_data(pixels);
  return datum;
}

// A database of `num` raw records of channels × height × width; record i has
// label 100 + i. `widths` overrides the width of single records.
std::string MakeDb(int num, int channels, int height, int width,
                   const std::vector<std::pair<int, int>>& widths = {}) {
  const std::string path = TempDir() + "/db";
  LmdbWriter writer(LmdbDatabase::Create(path), 4);
  for (int i = 0; i < num; ++i) {
    int w = width;
    for (const auto& o : widths)
      if (o.first == i) w = o.second;
    writer.Put(Key(i), RawDatum(i, channels, height, w).SerializeAsString());
  }
  writer.Commit();
  return path;
}

std::string DataLayerText(const std::string& source, int batch_size,
                          const std::string& extra = "", const std::string& phase = "TEST") {
  return "name: 'data' type: 'Data' phase: " + phase + " data_param { source: '" + source +
         "' batch_size: " + std::to_string(batch_size) + " backend: LMDB } " + extra;
}

struct Batch {
  std::vector<float> data, label;
};

Batch Next(Layer& layer, Blob& data, Blob& label) {
  layer.Reshape({}, {&data, &label});
  layer.Forward({}, {&data, &label});
  return {data.ReadData(), label.ReadData()};
}

}  // namespace

TEST(DataLayer, DeliversRecordsInOrderAndWrapsAround) {
  const int C = 2, H = 3, W = 5, num = 7, batch = 3;
  const std::string source = MakeDb(num, C, H, W);
  auto layer = MakeLayer(DataLayerText(source, batch, "transform_param { scale: 0.5 }"));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{batch, C, H, W}));
  EXPECT_EQ(label.shape(), (std::vector<int>{batch}));

  // Records 0 1 2 | 3 4 5 | 6 0 1 | 2 3 4 | 5 6 0
  for (int b = 0; b < 5; ++b) {
    const Batch got = Next(*layer, data, label);
    ASSERT_EQ(got.data.size(), size_t(batch * C * H * W));
    for (int n = 0; n < batch; ++n) {
      const int record = (b * batch + n) % num;
      EXPECT_EQ(got.label[n], 100 + record) << "batch " << b << " image " << n;
      for (int j = 0; j < C * H * W; ++j)
        ASSERT_EQ(got.data[n * C * H * W + j], 0.5f * PixelOf(record, j))
            << "batch " << b << " image " << n << " pixel " << j;
    }
  }
  auto* resumable = dynamic_cast<ResumableDataLayer*>(layer.get());
  ASSERT_NE(resumable, nullptr);
  EXPECT_EQ(resumable->ReaderState().records_read, 15u);
  EXPECT_EQ(resumable->ReaderState().epoch, 2u);
  EXPECT_EQ(resumable->ReaderState().next_key, Key(1));
}

TEST(DataLayer, DataOnlyWithCenterCrop) {
  const int C = 1, H = 5, W = 6;
  const std::string source = MakeDb(4, C, H, W);
  auto layer = MakeLayer(DataLayerText(source, 2, "transform_param { crop_size: 3 }"));
  Blob data(TestContext());
  layer->SetUp({}, {&data});
  EXPECT_EQ(data.shape(), (std::vector<int>{2, C, 3, 3}));
  layer->Forward({}, {&data});
  const std::vector<float> got = data.ReadData();
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 3; ++w)
        EXPECT_EQ(got[(n * 3 + h) * 3 + w], PixelOf(n, (1 + h) * W + 1 + w));
}

TEST(DataLayer, LegacyDataParamTransformFieldsAndUnsetBackend) {
  const std::string source = MakeDb(2, 1, 2, 2);
  // Caffe's net upgrade moves data_param.scale into transform_param; an
  // unset backend (LevelDB in Caffe) still reads an LMDB directory.
  auto layer = MakeLayer("name: 'd' type: 'Data' phase: TEST data_param { source: '" +
                         source + "' batch_size: 2 scale: 0.25 }");
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  const Batch got = Next(*layer, data, label);
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(got.data[n * 4 + j], 0.25f * PixelOf(n, j));
}

TEST(DataLayer, EncodedPngRecords) {
  const std::string path = TempDir() + "/db";
  std::vector<cv::Mat> images;
  {
    LmdbWriter writer(LmdbDatabase::Create(path));
    for (int i = 0; i < 3; ++i) {
      cv::Mat image(4, 5, CV_8UC3);
      for (int j = 0; j < 60; ++j) image.data[j] = PixelOf(i, j);
      std::vector<uint8_t> png;
      ASSERT_TRUE(cv::imencode(".png", image, png));
      caffe::Datum datum;
      datum.set_encoded(true);
      datum.set_label(i);
      datum.set_data(std::string(png.begin(), png.end()));
      writer.Put(Key(i), datum.SerializeAsString());
      images.push_back(image);
    }
  }
  auto layer = MakeLayer(DataLayerText(path, 3));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{3, 3, 4, 5}));
  const Batch got = Next(*layer, data, label);
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(got.label[n], n);
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w)
          ASSERT_EQ(got.data[((n * 3 + c) * 4 + h) * 5 + w],
                    images[n].ptr<uint8_t>(h)[w * 3 + c]);
  }
}

TEST(DataLayer, ClearErrors) {
  const std::string missing = TempDir() + "/no_such_lmdb";
  Blob data(TestContext()), label(TestContext());
  std::string error = ErrorOf([&] { MakeLayer(DataLayerText(missing, 2))->SetUp({}, {&data}); });
  EXPECT_NE(error.find("layer 'data' (Data): "), std::string::npos) << error;
  EXPECT_NE(error.find(missing), std::string::npos) << error;

  const std::string source = MakeDb(3, 1, 2, 2);
  error = ErrorOf([&] {
    MakeLayer("name: 'd' type: 'Data' data_param { source: '" + source +
              "' batch_size: 2 backend: LEVELDB }")
        ->SetUp({}, {&data});
  });
  EXPECT_NE(error.find("LEVELDB is not supported"), std::string::npos) << error;

  error = ErrorOf([&] { MakeLayer(DataLayerText(source, 0))->SetUp({}, {&data}); });
  EXPECT_NE(error.find("batch_size must be positive"), std::string::npos) << error;

  error = ErrorOf([&] {
    MakeLayer(DataLayerText(source, 2, "transform_param { crop_size: 3 }"))->SetUp({}, {&data});
  });
  EXPECT_NE(error.find("crop_size 3 is larger than the 2 x 2 images"), std::string::npos)
      << error;
}

TEST(DataLayer, RecordOfAnotherSizeInsideABatchIsAnError) {
  // Record 5 is 1 x 2 x 3 among 1 x 2 x 2 records: the second batch fails.
  const std::string source = MakeDb(8, 1, 2, 2, {{5, 3}});
  auto layer = MakeLayer(DataLayerText(source, 4));
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  Next(*layer, data, label);
  std::string error = ErrorOf([&] { Next(*layer, data, label); });
  EXPECT_NE(error.find("record '00000005' of " + source + " is 1 x 2 x 3"), std::string::npos)
      << error;
  EXPECT_NE(error.find("record '00000004'"), std::string::npos) << error;
  // The reader stays failed with the same message.
  EXPECT_EQ(ErrorOf([&] { Next(*layer, data, label); }), error);
}

TEST(DataLayer, ExactResumeOfCursorAndRandomCrops) {
  const std::string source = MakeDb(11, 2, 6, 7);
  const std::string text =
      DataLayerText(source, 3, "transform_param { crop_size: 4 mirror: true }", "TRAIN");
  auto layer = MakeLayer(text);
  auto* resumable = dynamic_cast<ResumableDataLayer*>(layer.get());
  ASSERT_NE(resumable, nullptr);
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  Next(*layer, data, label);
  Next(*layer, data, label);
  // Prefetched batches beyond the second do not count.
  const std::string saved = resumable->ReaderState().Serialize();
  std::vector<Batch> expected;
  for (int i = 0; i < 5; ++i) expected.push_back(Next(*layer, data, label));

  // Random crops/mirrors really vary, so matching them below means something.
  bool crops_vary = false;
  for (size_t i = 1; i < expected.size(); ++i)
    crops_vary |= expected[i].data != expected[0].data;
  EXPECT_TRUE(crops_vary);

  // A fresh layer (seeded differently) restored to the saved state...
  auto other = MakeLayer(text);
  Blob data2(TestContext()), label2(TestContext());
  other->SetUp({}, {&data2, &label2});
  dynamic_cast<ResumableDataLayer*>(other.get())
      ->RestoreReaderState(DataReaderState::Parse(saved));
  // ... and the first layer rewound mid-stream deliver the same batches.
  resumable->RestoreReaderState(DataReaderState::Parse(saved));
  for (int i = 0; i < 5; ++i) {
    const Batch a = Next(*other, data2, label2), b = Next(*layer, data, label);
    EXPECT_EQ(a.label, expected[i].label) << "batch " << i;
    EXPECT_EQ(a.data, expected[i].data) << "batch " << i;
    EXPECT_EQ(b.label, expected[i].label) << "batch " << i;
    EXPECT_EQ(b.data, expected[i].data) << "batch " << i;
  }
  EXPECT_EQ(resumable->ReaderState(),
            dynamic_cast<ResumableDataLayer*>(other.get())->ReaderState());
}

TEST(DataLayer, RestoringAStateOfAnotherDatabaseIsAnErrorAndHarmless) {
  const std::string source = MakeDb(5, 1, 2, 2);
  auto layer = MakeLayer(DataLayerText(source, 2));
  auto* resumable = dynamic_cast<ResumableDataLayer*>(layer.get());
  Blob data(TestContext()), label(TestContext());
  layer->SetUp({}, {&data, &label});
  DataReaderState state = resumable->ReaderState();
  state.next_key = "elsewhere";
  const std::string error = ErrorOf([&] { resumable->RestoreReaderState(state); });
  EXPECT_NE(error.find("cannot restore"), std::string::npos) << error;
  EXPECT_NE(error.find("'elsewhere'"), std::string::npos) << error;
  // Still reading from the start.
  EXPECT_EQ(Next(*layer, data, label).label, (std::vector<float>{100, 101}));
}

// Data-parallel training: replica r of R reads the records at positions r,
// r + R, r + 2R, ... of the endless sequence of epochs, so within an epoch no
// two replicas read the same record and together they read all of them.
// Only TRAIN-phase layers split the data (the root's test nets read it all).
TEST(DataLayer, ReplicasReadDisjointSharesThatCoverTheDataSet) {
  const int num = 11, replicas = 3, batch = 2, batches = 4;
  const std::string source = MakeDb(num, 1, 2, 3);
  std::vector<int> times_read(num, 0);
  for (int r = 0; r < replicas; ++r) {
    auto ctx = Context::Create("");
    ctx->set_replica({r, replicas});
    for (const char* phase : {"TRAIN", "TEST"}) {
      auto layer = LayerRegistry::Create(
          LayerParam(DataLayerText(source, batch, "", phase)), *ctx);
      Blob data(*ctx), label(*ctx);
      layer->SetUp({}, {&data, &label});
      const bool shared = std::string(phase) == "TRAIN";
      for (int b = 0; b < batches; ++b) {
        const Batch got = Next(*layer, data, label);
        for (int n = 0; n < batch; ++n) {
          const int position = shared ? r + (b * batch + n) * replicas : b * batch + n;
          EXPECT_EQ(got.label[n], 100 + position % num)
              << phase << ": replica " << r << " batch " << b << " image " << n;
          if (shared && position < num) ++times_read[position % num];
        }
      }
    }
  }
  for (int i = 0; i < num; ++i)
    EXPECT_EQ(times_read[i], 1) << "record " << i << " in the first epoch";
}

TEST(DataReaderState, SerializeParseRoundTrip) {
  DataReaderState state;
  state.next_key = std::string("k\0\xff y", 5);
  state.epoch = 3;
  state.records_read = 123456789012ull;
  Rng rng(99);
  rng();
  state.rng_state = DataReaderState::SaveRng(rng);
  const DataReaderState parsed = DataReaderState::Parse(state.Serialize());
  EXPECT_EQ(parsed, state);
  Rng loaded;
  DataReaderState::LoadRng(parsed.rng_state, &loaded);
  EXPECT_EQ(loaded, rng);
  EXPECT_THROW(DataReaderState::Parse("key 00\nepoch x\nrecords 1\nrng 1\n"), Error);
  EXPECT_THROW(DataReaderState::Parse("key 00\n"), Error);
}

}  // namespace test
}  // namespace dlcaffe
