// Image files, list files and the LMDBs made from them, for the tests of the
// dataset tools (convert_imageset, compute_image_mean, extract_features).
// Header-only: it uses OpenCV, which the test programs link but the shared
// test library does not.
#pragma once
#include <gtest/gtest.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/lmdb_database.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

// One line of a list file: a path relative to the image folder and a label.
struct ListedFile {
  std::string path;
  int label = 0;
};

// Writes four small images of different sizes, colours and formats under
// `folder` and returns them in list order: a colour PNG whose name has a
// space, a colour JPEG in a subfolder, a one-channel (gray) PNG, and a PNG of
// random colours.
inline std::vector<ListedFile> WriteSampleImages(const std::string& folder) {
  std::filesystem::create_directories(folder + "/sub");
  cv::Mat gradient(5, 7, CV_8UC3);  // rows × cols
  for (int h = 0; h < gradient.rows; ++h)
    for (int w = 0; w < gradient.cols; ++w)
      gradient.at<cv::Vec3b>(h, w) = cv::Vec3b(uchar(30 * w), uchar(40 * h), 200);
  cv::Mat blue(9, 12, CV_8UC3, cv::Scalar(220, 60, 10));
  cv::circle(blue, cv::Point(6, 4), 3, cv::Scalar(0, 255, 255), -1);
  cv::Mat gray(8, 6, CV_8UC1);
  for (int h = 0; h < gray.rows; ++h)
    for (int w = 0; w < gray.cols; ++w) gray.at<uchar>(h, w) = uchar(h * 31 + w * 7);
  cv::Mat noise(9, 9, CV_8UC3);
  cv::RNG rng(7);
  rng.fill(noise, cv::RNG::UNIFORM, 0, 256);
  const std::vector<std::pair<ListedFile, cv::Mat>> images = {
      {{"red gradient.png", 3}, gradient},
      {{"sub/blue.jpg", 1}, blue},
      {{"gray.png", 0}, gray},
      {{"noise.png", 2}, noise}};
  std::vector<ListedFile> listed;
  for (const auto& [file, pixels] : images) {
    EXPECT_TRUE(cv::imwrite(folder + "/" + file.path, pixels)) << file.path;
    listed.push_back(file);
  }
  return listed;
}

// Writes "path label" lines to `path`.
inline std::string WriteListFile(const std::string& path, const std::vector<ListedFile>& files) {
  std::ofstream out(path);
  for (const auto& f : files) out << f.path << " " << f.label << "\n";
  return path;
}

// The image file as Caffe's converter reads it: BGR or gray, resized
// (bilinear) when both sizes are positive.
inline cv::Mat ReadSourceImage(const std::string& path, bool is_color, int height = 0,
                               int width = 0) {
  cv::Mat image = cv::imread(path, is_color ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
  EXPECT_FALSE(image.empty()) << path;
  if (height > 0 && width > 0) cv::resize(image, image, cv::Size(width, height));
  return image;
}

// An 8-bit OpenCV image in Caffe's C × H × W byte order.
inline std::vector<uint8_t> ChannelMajor(const cv::Mat& image) {
  const int channels = image.channels(), plane = image.rows * image.cols;
  std::vector<uint8_t> bytes(size_t(plane) * channels);
  for (int h = 0; h < image.rows; ++h)
    for (int w = 0; w < image.cols; ++w)
      for (int c = 0; c < channels; ++c)
        bytes[c * plane + h * image.cols + w] = image.ptr<uint8_t>(h)[w * channels + c];
  return bytes;
}

// An encoded datum's image, decoded as a Data layer decodes it by default.
inline cv::Mat DecodeStoredImage(const caffe::Datum& datum) {
  const std::vector<uchar> bytes(datum.data().begin(), datum.data().end());
  return cv::imdecode(bytes, cv::IMREAD_ANYCOLOR);
}

// The sample images in a fresh folder with their list file, made once per
// test program.
struct SampleImageFolder {
  std::string dir = TempDir();
  std::string images = dir + "/images";
  std::vector<ListedFile> files = WriteSampleImages(images);
  std::string list = WriteListFile(dir + "/list.txt", files);
};

inline const SampleImageFolder& TheSample() {
  static const SampleImageFolder sample;
  return sample;
}

struct Record {
  std::string key;
  caffe::Datum datum;
};

// Every record of an LMDB, in key order.
inline std::vector<Record> ReadRecords(const std::string& db_path) {
  auto db = LmdbDatabase::OpenForReading(db_path);
  std::vector<Record> records(db->NumRecords());
  if (records.empty()) return records;
  LmdbCursor cursor(db);
  for (auto& record : records) {
    record.key = std::string(cursor.key());
    EXPECT_TRUE(record.datum.ParseFromArray(cursor.value().data(),
                                            static_cast<int>(cursor.value().size())))
        << record.key;
    cursor.Next();
  }
  return records;
}

}  // namespace test
}  // namespace dlcaffe
