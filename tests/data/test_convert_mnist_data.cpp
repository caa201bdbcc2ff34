// Runs the convert_mnist_data tool on tiny IDX files written here.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/lmdb_database.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

constexpr int kRows = 4, kCols = 5;

void PutBigEndian(std::ofstream& out, uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  out.write(b, 4);
}

uint8_t PixelOf(int item, int j) { return static_cast<uint8_t>((item * 53 + j * 3) % 256); }

// An IDX image file of `count` kRows × kCols images (pixels for `stored`
// of them: fewer makes a truncated file).
std::string WriteImages(const std::string& dir, uint32_t magic, int count, int stored) {
  const std::string path = dir + "/images-idx3-ubyte";
  std::ofstream out(path, std::ios::binary);
  PutBigEndian(out, magic);
  PutBigEndian(out, count);
  PutBigEndian(out, kRows);
  PutBigEndian(out, kCols);
  for (int i = 0; i < stored; ++i)
    for (int j = 0; j < kRows * kCols; ++j) out.put(static_cast<char>(PixelOf(i, j)));
  return path;
}

std::string WriteLabels(const std::string& dir, uint32_t magic, int count) {
  const std::string path = dir + "/labels-idx1-ubyte";
  std::ofstream out(path, std::ios::binary);
  PutBigEndian(out, magic);
  PutBigEndian(out, count);
  for (int i = 0; i < count; ++i) out.put(static_cast<char>((i * 3) % 10));
  return path;
}

struct ToolRun {
  int exit_code;
  std::string stderr_text;
};

// Runs the tool with `args`; returns its exit code and what it wrote to stderr.
ToolRun RunTool(const std::string& args) {
  const std::string tool = BuildDir() + "/tools/convert_mnist_data";
  EXPECT_TRUE(std::filesystem::exists(tool))
      << tool << " is missing: build the convert_mnist_data target";
  const std::string err = TempDir() + "/stderr.txt";
  const int status = std::system((tool + " " + args + " 2> " + err).c_str());
  std::ifstream in(err);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

}  // namespace

TEST(ConvertMnistData, WritesOneDatumPerImage) {
  const std::string dir = TempDir();
  const int count = 3;
  const std::string images = WriteImages(dir, 2051, count, count);
  const std::string labels = WriteLabels(dir, 2049, count);
  const std::string db = dir + "/mnist_lmdb";
  const ToolRun run = RunTool("--backend=lmdb " + images + " " + labels + " " + db);
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;

  LmdbCursor cursor(LmdbDatabase::OpenForReading(db));
  EXPECT_EQ(cursor.database().NumRecords(), size_t(count));
  for (int i = 0; i < count; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    EXPECT_EQ(cursor.key(), key);
    caffe::Datum datum;
    ASSERT_TRUE(datum.ParseFromArray(cursor.value().data(), int(cursor.value().size())));
    EXPECT_EQ(datum.channels(), 1);
    EXPECT_EQ(datum.height(), kRows);
    EXPECT_EQ(datum.width(), kCols);
    EXPECT_FALSE(datum.encoded());
    EXPECT_EQ(datum.label(), (i * 3) % 10);
    ASSERT_EQ(datum.data().size(), size_t(kRows * kCols));
    for (int j = 0; j < kRows * kCols; ++j)
      EXPECT_EQ(static_cast<uint8_t>(datum.data()[j]), PixelOf(i, j)) << "image " << i;
    cursor.Next();
  }
  EXPECT_EQ(cursor.epoch(), 1u);

  // Caffe's converters never overwrite a database.
  const ToolRun again = RunTool(images + " " + labels + " " + db);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.stderr_text.find(db), std::string::npos) << again.stderr_text;
  EXPECT_NE(again.stderr_text.find("already exists"), std::string::npos) << again.stderr_text;
}

TEST(ConvertMnistData, RejectsWrongMagicNamingTheFile) {
  const std::string dir = TempDir();
  // A label file given as the image file: magic 2049 instead of 2051.
  const std::string labels = WriteLabels(dir, 2049, 2);
  const std::string db = dir + "/db";
  ToolRun run = RunTool(labels + " " + labels + " " + db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.stderr_text.find(labels), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("wrong magic number 2049"), std::string::npos)
      << run.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db));

  const std::string images = WriteImages(dir, 2051, 2, 2);
  const std::string bad_labels = WriteLabels(TempDir(), 1234, 2);
  run = RunTool(images + " " + bad_labels + " " + db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.stderr_text.find(bad_labels), std::string::npos) << run.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(ConvertMnistData, RejectsMismatchedOrTruncatedFiles) {
  const std::string dir = TempDir();
  const std::string db = dir + "/db";
  ToolRun run =
      RunTool(WriteImages(dir, 2051, 3, 3) + " " + WriteLabels(dir, 2049, 2) + " " + db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.stderr_text.find("holds 3 images but"), std::string::npos) << run.stderr_text;

  // Header says 3 images, the file holds 2: no half-written database remains.
  const std::string truncated = WriteImages(dir, 2051, 3, 2);
  run = RunTool(truncated + " " + WriteLabels(dir, 2049, 3) + " " + db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.stderr_text.find(truncated), std::string::npos) << run.stderr_text;
  EXPECT_NE(run.stderr_text.find("ends at image 2"), std::string::npos) << run.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db));

  run = RunTool("--backend=leveldb " + truncated + " " + truncated + " " + db);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.stderr_text.find("not supported"), std::string::npos) << run.stderr_text;
}

}  // namespace test
}  // namespace dlcaffe
