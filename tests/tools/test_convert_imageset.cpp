// convert_imageset, run as a user runs it, on images written here: the
// records hold the source pixels (raw and encoded, colour and gray, resized),
// Caffe's keys and labels; unreadable images are reported and skipped; every
// other mistake is one clear message and leaves no database behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "util/image_dataset.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

// Runs convert_imageset FLAGS ROOT/ LIST DB on the sample into a fresh path.
ToolResult Convert(const std::string& flags, std::string* db,
                   const std::string& list = TheSample().list) {
  *db = TempDir() + "/db";
  return RunTool("convert_imageset",
                 flags + " " + Quoted(TheSample().images + "/") + " " + Quoted(list) + " " + *db);
}

std::string Key(int index, const std::string& path) {
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%08d_", index);
  return prefix + path;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Raw records: Caffe's keys and labels, and the source pixels in C × H × W.
void ExpectRawRecords(const std::string& db, bool is_color, int height, int width) {
  const SampleImageFolder& s = TheSample();
  const std::vector<Record> records = ReadRecords(db);
  ASSERT_EQ(records.size(), s.files.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const caffe::Datum& datum = records[i].datum;
    const cv::Mat source = ReadSourceImage(s.images + "/" + s.files[i].path, is_color, height, width);
    EXPECT_EQ(records[i].key, Key(int(i), s.files[i].path));
    EXPECT_EQ(datum.label(), s.files[i].label);
    EXPECT_FALSE(datum.encoded());
    EXPECT_EQ(datum.channels(), is_color ? 3 : 1);
    EXPECT_EQ(datum.height(), source.rows);
    EXPECT_EQ(datum.width(), source.cols);
    const std::vector<uint8_t> expected = ChannelMajor(source);
    EXPECT_EQ(std::vector<uint8_t>(datum.data().begin(), datum.data().end()), expected)
        << s.files[i].path;
  }
}

bool IsJpeg(const std::string& bytes) { return bytes.compare(0, 2, "\xFF\xD8") == 0; }

// The pixels as OpenCV's JPEG writer (default quality) and reader leave them.
cv::Mat JpegRoundTrip(const cv::Mat& image) {
  std::vector<uchar> bytes;
  EXPECT_TRUE(cv::imencode(".jpg", image, bytes));
  return cv::imdecode(bytes, cv::IMREAD_ANYCOLOR);
}

// Encoded records decode (as a Data layer decodes them) to the source pixels
// (after a JPEG round trip where a JPEG was encoded again).
std::vector<Record> ExpectEncodedRecords(const std::string& db, bool is_color, int height,
                                         int width) {
  const SampleImageFolder& s = TheSample();
  std::vector<Record> records = ReadRecords(db);
  EXPECT_EQ(records.size(), s.files.size());
  for (size_t i = 0; i < std::min(records.size(), s.files.size()); ++i) {
    const caffe::Datum& datum = records[i].datum;
    EXPECT_EQ(records[i].key, Key(int(i), s.files[i].path));
    EXPECT_EQ(datum.label(), s.files[i].label);
    EXPECT_TRUE(datum.encoded());
    const cv::Mat decoded = DecodeStoredImage(datum);
    const cv::Mat source = ReadSourceImage(s.images + "/" + s.files[i].path, is_color, height, width);
    EXPECT_EQ(decoded.channels(), source.channels()) << s.files[i].path;
    if (decoded.channels() != source.channels()) continue;
    const std::string file = s.images + "/" + s.files[i].path;
    const bool reencoded_jpeg = IsJpeg(datum.data()) && datum.data() != FileBytes(file);
    EXPECT_EQ(ChannelMajor(decoded), ChannelMajor(reencoded_jpeg ? JpegRoundTrip(source) : source))
        << file;
  }
  return records;
}

}  // namespace

TEST(ConvertImageset, RawColorRecordsHoldTheSourcePixels) {
  std::string db;
  const ToolResult r = Convert("", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "A total of 4 images.")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Processed 4 files.")) << r.output;
  ExpectRawRecords(db, /*is_color=*/true, 0, 0);
}

TEST(ConvertImageset, GrayResizedRecordsHoldTheResizedGrayPixels) {
  std::string db;
  const ToolResult r = Convert("--gray --resize_width=5 --resize_height=4", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectRawRecords(db, /*is_color=*/false, 4, 5);
}

// --encoded without --encode_type keeps each file's own bytes (Caffe) when
// they decode to the asked channels; the one-channel PNG in a colour set is
// re-encoded in colour, so every record decodes to three channels.
TEST(ConvertImageset, EncodedKeepsTheFilesOwnBytes) {
  const SampleImageFolder& s = TheSample();
  std::string db;
  const ToolResult r = Convert("--encoded", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Record> records = ExpectEncodedRecords(db, /*is_color=*/true, 0, 0);
  ASSERT_EQ(records.size(), 4u);
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string file = FileBytes(s.images + "/" + s.files[i].path);
    if (s.files[i].path == "gray.png") {
      EXPECT_NE(records[i].datum.data(), file);
    } else {
      EXPECT_EQ(records[i].datum.data(), file) << s.files[i].path;
    }
  }
  // In a gray set the gray PNG keeps its bytes.
  const ToolResult gray = Convert("--encoded --gray", &db);
  ASSERT_EQ(gray.exit_code, 0) << gray.output;
  const std::vector<Record> gray_records = ExpectEncodedRecords(db, /*is_color=*/false, 0, 0);
  ASSERT_EQ(gray_records.size(), 4u);
  EXPECT_EQ(gray_records[2].datum.data(), FileBytes(s.images + "/gray.png"));
}

// Resized images are encoded again in their file's format; a file without an
// extension keeps its bytes, but cannot be encoded again without --encode_type.
TEST(ConvertImageset, EncodedResizedImagesKeepTheirFormat) {
  const SampleImageFolder& s = TheSample();
  std::string db;
  const ToolResult r = Convert("--encoded --resize_width=6 --resize_height=3", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<Record> records = ExpectEncodedRecords(db, /*is_color=*/true, 3, 6);
  ASSERT_EQ(records.size(), 4u);
  for (size_t i = 0; i < records.size(); ++i) {
    const bool jpeg = s.files[i].path == "sub/blue.jpg";
    EXPECT_EQ(IsJpeg(records[i].datum.data()), jpeg) << records[i].key;
    EXPECT_EQ(records[i].datum.data().substr(1, 3) == "PNG", !jpeg) << records[i].key;
  }

  const std::string dir = TempDir();
  std::filesystem::copy_file(s.images + "/noise.png", dir + "/noise");
  const std::string list = WriteListFile(dir + "/list.txt", {{"noise", 4}});
  const std::string root = "'" + dir + "/' " + list + " ";
  ToolResult kept = RunTool("convert_imageset", "--encoded " + root + dir + "/kept");
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  const std::vector<Record> kept_records = ReadRecords(dir + "/kept");
  ASSERT_EQ(kept_records.size(), 1u);
  EXPECT_EQ(kept_records[0].datum.data(), FileBytes(dir + "/noise"));
  ExpectCleanToolError(
      RunTool("convert_imageset", "--encoded --resize_width=4 --resize_height=4 " + root + dir + "/db"),
      "convert_imageset",
      list + ":1: " + dir + "/noise: cannot tell the image format from the name; --encode_type");
}

TEST(ConvertImageset, EncodeTypeReencodesResizedImages) {
  std::string db;
  const ToolResult r = Convert("--encode_type=png --resize_width=6 --resize_height=3", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "encode_type specified, assuming encoded=true.")) << r.output;
  const std::vector<Record> records = ExpectEncodedRecords(db, /*is_color=*/true, 3, 6);
  for (const Record& record : records) {
    // PNG (lossless) even for the JPEG.
    EXPECT_EQ(record.datum.data().substr(1, 3), "PNG") << record.key;
  }
}

TEST(ConvertImageset, ShuffleKeepsTheSameImagesAndLabels) {
  const SampleImageFolder& s = TheSample();
  std::string db;
  const ToolResult r = Convert("--shuffle", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Shuffling data")) << r.output;
  const std::vector<Record> records = ReadRecords(db);
  ASSERT_EQ(records.size(), s.files.size());
  std::set<std::string> expected, seen;
  for (const auto& f : s.files) expected.insert(f.path + " " + std::to_string(f.label));
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string path = records[i].key.substr(9);  // after "%08d_"
    EXPECT_EQ(records[i].key, Key(int(i), path));
    seen.insert(path + " " + std::to_string(records[i].datum.label()));
    const std::vector<uint8_t> source = ChannelMajor(ReadSourceImage(s.images + "/" + path, true));
    EXPECT_EQ(records[i].datum.data(), std::string(source.begin(), source.end())) << path;
  }
  EXPECT_EQ(seen, expected);
}

// --shuffle_seed makes the order a function of the seed: the same seed gives
// the same keys on every run, and some other seed gives another order.
TEST(ConvertImageset, ShuffleSeedFixesTheOrder) {
  auto keys = [](const std::string& flags) {
    std::string db;
    const ToolResult r = Convert(flags, &db);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> order;
    for (const Record& record : ReadRecords(db)) order.push_back(record.key);
    std::filesystem::remove_all(db);
    return order;
  };
  const std::vector<std::string> first = keys("--shuffle --shuffle_seed=7");
  ASSERT_EQ(first.size(), TheSample().files.size());
  EXPECT_EQ(keys("--shuffle --shuffle_seed=7"), first);
  bool another_order = false;
  for (int seed = 8; seed < 16 && !another_order; ++seed)
    another_order = keys("--shuffle --shuffle_seed=" + std::to_string(seed)) != first;
  EXPECT_TRUE(another_order);
}

TEST(ConvertImageset, CheckSizeRefusesImagesOfDifferentSizes) {
  std::string db;
  ToolResult r = Convert("--check_size", &db);
  ExpectCleanToolError(r, "convert_imageset", TheSample().list + ":2: --check_size");
  EXPECT_TRUE(Contains(r.output, "sub/blue.jpg is 3 x 9 x 12")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(db)) << "a half-written database was left";

  r = Convert("--check_size --resize_width=8 --resize_height=8", &db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadRecords(db).size(), 4u);
}

// Caffe's behaviour: a bad image is reported and skipped, the rest are kept
// under their list positions.
TEST(ConvertImageset, UnreadableImagesAreReportedAndSkipped) {
  const SampleImageFolder& s = TheSample();
  const std::string dir = TempDir();
  { std::ofstream(s.images + "/broken.jpg") << "not a jpeg"; }
  const std::string list = WriteListFile(
      dir + "/list.txt", {s.files[0], {"missing.png", 5}, s.files[1], {"broken.jpg", 6}});
  std::string db;
  const ToolResult r = Convert("", &db, list);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, list + ":2: cannot read image " + s.images + "/missing.png"))
      << r.output;
  EXPECT_TRUE(Contains(r.output, list + ":4: cannot read image " + s.images + "/broken.jpg"))
      << r.output;
  EXPECT_TRUE(Contains(r.output, "Skipped 2 of 4 images")) << r.output;
  const std::vector<Record> records = ReadRecords(db);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].key, Key(0, s.files[0].path));
  EXPECT_EQ(records[1].key, Key(2, s.files[1].path));

  // Nothing readable at all: an error, no empty database.
  const std::string none = WriteListFile(dir + "/none.txt", {{"missing.png", 1}});
  ExpectCleanToolError(Convert("", &db, none), "convert_imageset", "none of the 1 images");
  EXPECT_FALSE(std::filesystem::exists(db));
}

// More than 1000 images: commits every 1000 with Caffe's line and a rate.
TEST(ConvertImageset, LargeListsLogProgress) {
  const SampleImageFolder& s = TheSample();
  std::vector<ListedFile> many(1001, s.files[2]);
  const std::string list = WriteListFile(TempDir() + "/many.txt", many);
  std::string db;
  const ToolResult r = Convert("", &db, list);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Processed 1000 files.")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Progress: 1000 of 1001 images, ")) << r.output;
  EXPECT_TRUE(Contains(r.output, " images/s")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Processed 1001 files.")) << r.output;
  const std::vector<Record> records = ReadRecords(db);
  ASSERT_EQ(records.size(), 1001u);
  EXPECT_EQ(records[1000].key, Key(1000, "gray.png"));
}

TEST(ConvertImageset, UserMistakesAreOneClearMessage) {
  const SampleImageFolder& s = TheSample();
  const std::string dir = TempDir();
  const std::string db = dir + "/db";
  auto run = [&](const std::string& args) { return RunTool("convert_imageset", args); };
  const std::string tool = "convert_imageset";

  ExpectCleanToolError(run(dir + "/no_such_folder/ " + s.list + " " + db), tool,
                       "root folder " + dir + "/no_such_folder/ does not exist");
  ExpectCleanToolError(run(Quoted(s.images + "/") + " " + dir + "/no_list.txt " + db), tool,
                       "cannot open list file " + dir + "/no_list.txt");
  const std::string empty = WriteListFile(dir + "/empty.txt", {});
  ExpectCleanToolError(run(Quoted(s.images + "/") + " " + empty + " " + db), tool,
                       "list file " + empty + " lists no images");
  { std::ofstream(dir + "/no_label.txt") << "gray.png 1\nnoise.png\n"; }
  ExpectCleanToolError(run(Quoted(s.images + "/") + " " + dir + "/no_label.txt " + db), tool,
                       dir + "/no_label.txt:2: 'noise.png' has no label");
  { std::ofstream(dir + "/bad_label.txt") << "gray.png 1\n\nnoise.png two\n"; }
  ExpectCleanToolError(run(Quoted(s.images + "/") + " " + dir + "/bad_label.txt " + db), tool,
                       dir + "/bad_label.txt:3: label 'two' is not an integer");
  const std::string images = Quoted(s.images + "/") + " " + Quoted(s.list) + " ";
  ExpectCleanToolError(run("--backend=leveldb " + images + db), tool,
                       "--backend 'leveldb' is not supported");
  ExpectCleanToolError(run("--encode_type=xyz " + images + db), tool,
                       "--encode_type=xyz: OpenCV cannot write that format");
  ExpectCleanToolError(run("--resize_width=8 " + images + db), tool,
                       "give both --resize_width and --resize_height");
  EXPECT_FALSE(std::filesystem::exists(db));

  // Caffe never overwrites a database.
  ASSERT_EQ(run(images + db).exit_code, 0);
  ExpectCleanToolError(run(images + db), tool, "database " + db + " already exists");
  EXPECT_EQ(ReadRecords(db).size(), 4u) << "the existing database was touched";

  // The wrong number of arguments prints the usage.
  const ToolResult usage = run(images);
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_TRUE(Contains(usage.output, "convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME"))
      << usage.output;
}

}  // namespace test
}  // namespace dlcaffe
