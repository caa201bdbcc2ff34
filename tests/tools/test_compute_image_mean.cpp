// compute_image_mean on databases made by convert_imageset (raw and encoded)
// and on float datums: the .binaryproto and the logged channel means equal
// the means computed here from the source images; bad databases are one
// clear message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dlcaffe/io.hpp"
#include "util/image_dataset.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kHeight = 5, kWidth = 6;  // the sample images are resized to this

// A database of the sample images made by convert_imageset with `flags`.
std::string ConvertSample(const std::string& flags) {
  const std::string db = TempDir() + "/db";
  const ToolResult r = RunTool("convert_imageset", flags + " '" + TheSample().images + "/' " +
                                                       TheSample().list + " " + db);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return db;
}

// The mean of the resized colour sample images, C × H × W, computed here.
std::vector<double> ExpectedMean() {
  const SampleImageFolder& s = TheSample();
  std::vector<double> mean(3 * kHeight * kWidth, 0.0);
  for (const auto& f : s.files) {
    const std::vector<uint8_t> pixels =
        ChannelMajor(ReadSourceImage(s.images + "/" + f.path, true, kHeight, kWidth));
    for (size_t i = 0; i < mean.size(); ++i) mean[i] += pixels[i];
  }
  for (double& m : mean) m /= s.files.size();
  return mean;
}

// The value logged after "mean_value channel [c]: ".
double LoggedChannelMean(const std::string& output, int c) {
  const std::string label = "mean_value channel [" + std::to_string(c) + "]: ";
  const size_t at = output.find(label);
  EXPECT_NE(at, std::string::npos) << output;
  return at == std::string::npos ? -1 : std::atof(output.c_str() + at + label.size());
}

// Runs the tool on `db`; checks the binaryproto and the logged means against
// `expected` (C × H × W).
void ExpectMean(const std::string& db, int channels, int height, int width,
                const std::vector<double>& expected) {
  const std::string mean_file = TempDir() + "/mean.binaryproto";
  const ToolResult r = RunTool("compute_image_mean", db + " " + mean_file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  caffe::BlobProto mean;
  ReadProtoFromBinaryFile(mean_file, &mean);
  EXPECT_EQ(mean.num(), 1);
  EXPECT_EQ(mean.channels(), channels);
  EXPECT_EQ(mean.height(), height);
  EXPECT_EQ(mean.width(), width);
  ASSERT_EQ(mean.data_size(), static_cast<int>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(mean.data(static_cast<int>(i)), expected[i], 1e-4) << "element " << i;

  EXPECT_TRUE(Contains(r.output, "Number of channels: " + std::to_string(channels))) << r.output;
  const size_t plane = size_t(height) * width;
  for (int c = 0; c < channels; ++c) {
    double channel_mean = 0;
    for (size_t i = 0; i < plane; ++i) channel_mean += expected[c * plane + i];
    channel_mean /= plane;
    EXPECT_NEAR(LoggedChannelMean(r.output, c), channel_mean, 1e-3) << "channel " << c;
  }
}

// A database of float datums written here.
std::string WriteFloatDatums(const std::vector<std::vector<float>>& images, int channels,
                             int height, int width) {
  const std::string path = TempDir() + "/floats";
  LmdbWriter writer(LmdbDatabase::Create(path));
  for (size_t i = 0; i < images.size(); ++i) {
    caffe::Datum datum;
    datum.set_channels(channels);
    datum.set_height(height);
    datum.set_width(width);
    for (float v : images[i]) datum.add_float_data(v);
    writer.Put("key" + std::to_string(i), datum.SerializeAsString());
  }
  writer.Commit();
  return path;
}

}  // namespace

TEST(ComputeImageMean, RawDatabaseMeanEqualsTheImagesMean) {
  ExpectMean(ConvertSample("--resize_width=6 --resize_height=5"), 3, kHeight, kWidth,
             ExpectedMean());
}

TEST(ComputeImageMean, EncodedDatabaseMeanEqualsTheImagesMean) {
  const std::string db = ConvertSample("--encode_type=png --resize_width=6 --resize_height=5");
  ExpectMean(db, 3, kHeight, kWidth, ExpectedMean());
  const ToolResult r = RunTool("compute_image_mean", db);  // no OUTPUT_FILE: logs only
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Decoding Datum")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Processed 4 files.")) << r.output;
  EXPECT_FALSE(Contains(r.output, "Write to")) << r.output;
}

TEST(ComputeImageMean, FloatDatumsAreAveraged) {
  const std::string db = WriteFloatDatums({{1.5f, -2, 4, 0.25f}, {2.5f, 2, 0, 0.75f}}, 1, 2, 2);
  ExpectMean(db, 1, 2, 2, {2.0, 0.0, 2.0, 0.5});
}

TEST(ComputeImageMean, ImagesOfDifferentSizesNameTheRecord) {
  const std::string db = ConvertSample("");
  ExpectCleanToolError(RunTool("compute_image_mean", db), "compute_image_mean",
                       "record '00000001_sub/blue.jpg' of " + db + " is 3 x 9 x 12");
}

TEST(ComputeImageMean, BadDatabasesAreOneClearMessage) {
  const std::string tool = "compute_image_mean";
  const std::string dir = TempDir();
  ExpectCleanToolError(RunTool(tool, dir + "/missing_db"), tool,
                       dir + "/missing_db does not exist");
  ExpectCleanToolError(RunTool(tool, "'" + TheSample().images + "'"), tool,
                       TheSample().images + " is not an LMDB database");
  ExpectCleanToolError(RunTool(tool, TheSample().list), tool,
                       TheSample().list + " is not a directory");
  LmdbDatabase::Create(dir + "/empty_db");
  ExpectCleanToolError(RunTool(tool, dir + "/empty_db"), tool, dir + "/empty_db is empty");
  ExpectCleanToolError(RunTool(tool, "--backend=leveldb " + dir + "/empty_db"), tool,
                       "--backend 'leveldb' is not supported");
  std::filesystem::create_directories(dir + "/garbage_db");
  { std::ofstream(dir + "/garbage_db/data.mdb") << std::string(8192, 'x'); }
  ExpectCleanToolError(RunTool(tool, dir + "/garbage_db"), tool, dir + "/garbage_db");

  const ToolResult usage = RunTool(tool, "a b c");
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_TRUE(Contains(usage.output, "compute_image_mean [FLAGS] INPUT_DB [OUTPUT_FILE]"))
      << usage.output;
}

}  // namespace test
}  // namespace dlcaffe
