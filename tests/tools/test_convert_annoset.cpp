// convert_annoset, run as a user runs it, on a small PASCAL VOC-style folder
// written here: the records hold the images and the boxes normalized and
// grouped by label as Caffe SSD's; text annotations too; mistakes in the
// annotations are one clear message naming the file, and leave no database.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/lmdb_database.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

struct Object {
  std::string name;
  int xmin, ymin, xmax, ymax;
  bool difficult;
};

void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string VocXml(int width, int height, const std::vector<Object>& objects) {
  std::string xml = "<annotation>\n  <folder>test</folder>\n  <size><width>" + std::to_string(width) +
                    "</width><height>" + std::to_string(height) + "</height><depth>3</depth></size>\n";
  for (const Object& o : objects)
    xml += "  <object><name>" + o.name + "</name><difficult>" + (o.difficult ? "1" : "0") +
           "</difficult><bndbox><xmin>" + std::to_string(o.xmin) + "</xmin><ymin>" +
           std::to_string(o.ymin) + "</ymin><xmax>" + std::to_string(o.xmax) + "</xmax><ymax>" +
           std::to_string(o.ymax) + "</ymax></bndbox></object>\n";
  return xml + "</annotation>\n";
}

// Two images (40 x 30 and 50 x 20) with their XML; returns the root folder.
std::string VocFolder() {
  const std::string root = TempDir() + "/voc";
  std::filesystem::create_directories(root + "/JPEGImages");
  cv::imwrite(root + "/JPEGImages/a.png", cv::Mat(30, 40, CV_8UC3, cv::Scalar(10, 20, 30)));
  cv::imwrite(root + "/JPEGImages/b.png", cv::Mat(20, 50, CV_8UC3, cv::Scalar(40, 50, 60)));
  WriteFile(root + "/Annotations/a.xml",
            VocXml(40, 30, {{"dog", 2, 3, 20, 25, false}, {"cat", 5, 5, 10, 12, true},
                            {"dog", 21, 1, 39, 29, false}}));
  WriteFile(root + "/Annotations/b.xml", VocXml(50, 20, {{"cat", 0, 0, 50, 20, false}}));
  WriteFile(root + "/list.txt", "JPEGImages/a.png Annotations/a.xml\n\nJPEGImages/b.png Annotations/b.xml\n");
  WriteFile(root + "/labelmap.prototxt",
            "item { name: 'none_of_the_above' label: 0 display_name: 'background' }\n"
            "item { name: 'cat' label: 1 display_name: 'cat' }\n"
            "item { name: 'dog' label: 2 display_name: 'dog' }\n");
  return root;
}

std::vector<caffe::AnnotatedDatum> ReadAll(const std::string& db_path, std::vector<std::string>* keys) {
  auto db = LmdbDatabase::OpenForReading(db_path);
  std::vector<caffe::AnnotatedDatum> records(db->NumRecords());
  LmdbCursor cursor(db);
  for (auto& r : records) {
    keys->emplace_back(cursor.key());
    EXPECT_TRUE(r.ParseFromArray(cursor.value().data(), static_cast<int>(cursor.value().size())));
    cursor.Next();
  }
  return records;
}

ToolResult Convert(const std::string& root, const std::string& flags, const std::string& db) {
  return RunTool("convert_annoset", flags + " --label_map_file=" + root + "/labelmap.prototxt " +
                                        root + "/ " + root + "/list.txt " + db);
}

void ExpectBox(const caffe::Annotation& a, int instance, float xmin, float ymin, float xmax,
               float ymax, bool difficult) {
  EXPECT_EQ(a.instance_id(), instance);
  EXPECT_FLOAT_EQ(a.bbox().xmin(), xmin);
  EXPECT_FLOAT_EQ(a.bbox().ymin(), ymin);
  EXPECT_FLOAT_EQ(a.bbox().xmax(), xmax);
  EXPECT_FLOAT_EQ(a.bbox().ymax(), ymax);
  EXPECT_EQ(a.bbox().difficult(), difficult);
}

}  // namespace

TEST(ConvertAnnoset, WritesImagesAndBoxesGroupedByLabel) {
  const std::string root = VocFolder(), db = TempDir() + "/voc_db";
  const ToolResult r = Convert(root, "--anno_type=detection", db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> keys;
  const std::vector<caffe::AnnotatedDatum> records = ReadAll(db, &keys);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(keys, (std::vector<std::string>{"00000000_JPEGImages/a.png", "00000001_JPEGImages/b.png"}));
  const caffe::AnnotatedDatum& a = records[0];
  EXPECT_EQ(a.type(), caffe::AnnotatedDatum::BBOX);
  EXPECT_EQ(a.datum().channels(), 3);
  EXPECT_EQ(a.datum().height(), 30);
  EXPECT_EQ(a.datum().width(), 40);
  EXPECT_EQ(static_cast<unsigned char>(a.datum().data()[0]), 10);  // B plane first
  // Groups in the order labels first appear: dog (2), then cat (1).
  ASSERT_EQ(a.annotation_group_size(), 2);
  EXPECT_EQ(a.annotation_group(0).group_label(), 2);
  ASSERT_EQ(a.annotation_group(0).annotation_size(), 2);
  ExpectBox(a.annotation_group(0).annotation(0), 0, 2.f / 40, 3.f / 30, 20.f / 40, 25.f / 30, false);
  ExpectBox(a.annotation_group(0).annotation(1), 1, 21.f / 40, 1.f / 30, 39.f / 40, 29.f / 30, false);
  EXPECT_EQ(a.annotation_group(1).group_label(), 1);
  ExpectBox(a.annotation_group(1).annotation(0), 0, 5.f / 40, 5.f / 30, 10.f / 40, 12.f / 30, true);
  ASSERT_EQ(records[1].annotation_group_size(), 1);
  ExpectBox(records[1].annotation_group(0).annotation(0), 0, 0.f, 0.f, 1.f, 1.f, false);
}

TEST(ConvertAnnoset, ResizedAndEncodedImagesKeepTheirBoxes) {
  const std::string root = VocFolder(), db = TempDir() + "/voc_resized_db";
  const ToolResult r = Convert(root, "--resize_width=32 --resize_height=16 --encode_type=png", db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> keys;
  const std::vector<caffe::AnnotatedDatum> records = ReadAll(db, &keys);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].datum().encoded());
  const std::vector<uchar> bytes(records[0].datum().data().begin(), records[0].datum().data().end());
  const cv::Mat image = cv::imdecode(bytes, cv::IMREAD_COLOR);
  EXPECT_EQ(image.rows, 16);
  EXPECT_EQ(image.cols, 32);
  // Normalized by the image's own size, not the resized one.
  ExpectBox(records[0].annotation_group(0).annotation(0), 0, 2.f / 40, 3.f / 30, 20.f / 40, 25.f / 30, false);
}

TEST(ConvertAnnoset, ReadsTextAnnotations) {
  const std::string root = VocFolder(), db = TempDir() + "/txt_db";
  WriteFile(root + "/a.txt", "3 4 2 20 10\n\n1 0 0 40 30\n");
  WriteFile(root + "/list_txt.txt", "JPEGImages/a.png a.txt\n");
  const ToolResult r = RunTool("convert_annoset", "--label_type=txt " + root + "/ " + root + "/list_txt.txt " + db);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> keys;
  const std::vector<caffe::AnnotatedDatum> records = ReadAll(db, &keys);
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(records[0].annotation_group_size(), 2);
  EXPECT_EQ(records[0].annotation_group(0).group_label(), 3);
  ExpectBox(records[0].annotation_group(0).annotation(0), 0, 4.f / 40, 2.f / 30, 20.f / 40, 10.f / 30, false);
  EXPECT_EQ(records[0].annotation_group(1).group_label(), 1);
}

TEST(ConvertAnnoset, MistakesAreOneMessageAndLeaveNoDatabase) {
  struct Case {
    std::string xml_a, flags, must_mention;
  };
  const std::vector<Case> cases = {
      {VocXml(40, 30, {{"horse", 1, 1, 5, 5, false}}), "", "'horse' is not in the label map"},
      {VocXml(41, 30, {}), "", "<size> says 41 x 30"},
      {"<annotation><size><width>40</width></size></annotation>", "", "has no <height>"},
      {"<annotation", "", "cannot read the XML annotation"},
      {VocXml(40, 30, {{"dog", 9, 1, 5, 5, false}}), "", "corners swapped"},
      {VocXml(40, 30, {}), "--anno_type=classification", "convert_imageset"},
      {VocXml(40, 30, {}), "--label_type=json", "xml or txt"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.must_mention);
    const std::string root = VocFolder(), db = TempDir() + "/bad_db";
    WriteFile(root + "/Annotations/a.xml", c.xml_a);
    const ToolResult r = Convert(root, c.flags, db);
    ExpectCleanToolError(r, "convert_annoset", c.must_mention);
    EXPECT_FALSE(std::filesystem::exists(db));
  }
}

}  // namespace test
}  // namespace dlcaffe
