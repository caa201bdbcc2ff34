#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <string>
#include <vector>

#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/error.hpp"
#include "util/error_of.hpp"

namespace dlcaffe {
namespace test {

namespace {

// A height × width image with `channels` channels and varied pixel values.
cv::Mat TestImage(int height, int width, int channels) {
  cv::Mat image(height, width, CV_8UC(channels));
  for (int h = 0; h < height; ++h)
    for (int w = 0; w < width; ++w)
      for (int c = 0; c < channels; ++c)
        image.ptr<uint8_t>(h)[w * channels + c] =
            static_cast<uint8_t>((h * 37 + w * 11 + c * 101) % 256);
  return image;
}

caffe::Datum EncodedDatum(const cv::Mat& image, const std::string& ext, int label) {
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(ext, image, bytes));
  caffe::Datum datum;
  datum.set_encoded(true);
  datum.set_data(std::string(bytes.begin(), bytes.end()));
  datum.set_label(label);
  return datum;
}

// Checks that `decoded` is `image` (interleaved H×W×C) in C×H×W order.
void ExpectChannelMajor(const cv::Mat& image, const DatumImage& decoded) {
  ASSERT_EQ(decoded.channels, image.channels());
  ASSERT_EQ(decoded.height, image.rows);
  ASSERT_EQ(decoded.width, image.cols);
  ASSERT_FALSE(decoded.is_float);
  ASSERT_EQ(decoded.bytes.size(), decoded.count());
  const int channels = image.channels(), plane = image.rows * image.cols;
  for (int h = 0; h < image.rows; ++h)
    for (int w = 0; w < image.cols; ++w)
      for (int c = 0; c < channels; ++c)
        ASSERT_EQ(decoded.bytes[c * plane + h * image.cols + w],
                  image.ptr<uint8_t>(h)[w * channels + c])
            << "c " << c << " h " << h << " w " << w;
}

}  // namespace

TEST(Datum, DecodesRawBytes) {
  caffe::Datum datum;
  datum.set_channels(3);
  datum.set_height(2);
  datum.set_width(5);
  datum.set_label(7);
  std::string pixels(30, '\0');
  for (int i = 0; i < 30; ++i) pixels[i] = static_cast<char>(i * 9);
  datum.set_data(pixels);
  std::string serialized;
  datum.SerializeToString(&serialized);

  caffe::Datum parsed;
  ParseDatum(serialized, "record 'x'", &parsed);
  DatumImage image;
  DecodeDatum(parsed, DatumColor::kNative, "record 'x'", &image);
  EXPECT_EQ(image.channels, 3);
  EXPECT_EQ(image.height, 2);
  EXPECT_EQ(image.width, 5);
  EXPECT_EQ(image.label, 7);
  EXPECT_FALSE(image.is_float);
  ASSERT_EQ(image.bytes.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(image.bytes[i], static_cast<uint8_t>(i * 9));
  // Colour modes concern encoded images only.
  DecodeDatum(parsed, DatumColor::kForceGray, "record 'x'", &image);
  EXPECT_EQ(image.channels, 3);
}

TEST(Datum, DecodesFloatData) {
  caffe::Datum datum;
  datum.set_channels(1);
  datum.set_height(3);
  datum.set_width(1);
  datum.set_label(2);
  for (float v : {0.5f, -1.25f, 3.f}) datum.add_float_data(v);
  DatumImage image;
  DecodeDatum(datum, DatumColor::kNative, "r", &image);
  EXPECT_TRUE(image.is_float);
  EXPECT_EQ(image.label, 2);
  EXPECT_EQ(image.floats, (std::vector<float>{0.5f, -1.25f, 3.f}));
}

TEST(Datum, DecodesEncodedColourPngToChannelMajorBgr) {
  const cv::Mat bgr = TestImage(7, 13, 3);
  DatumImage image;
  DecodeDatum(EncodedDatum(bgr, ".png", 4), DatumColor::kNative, "r", &image);
  EXPECT_EQ(image.label, 4);
  ExpectChannelMajor(bgr, image);
  DecodeDatum(EncodedDatum(bgr, ".png", 4), DatumColor::kForceColor, "r", &image);
  ExpectChannelMajor(bgr, image);
}

TEST(Datum, DecodesEncodedGrayPngAndHonoursForcedColour) {
  const cv::Mat gray = TestImage(5, 3, 1);
  const caffe::Datum datum = EncodedDatum(gray, ".png", 1);
  DatumImage image;
  DecodeDatum(datum, DatumColor::kNative, "r", &image);
  ExpectChannelMajor(gray, image);

  // force_color: three equal planes.
  DecodeDatum(datum, DatumColor::kForceColor, "r", &image);
  ASSERT_EQ(image.channels, 3);
  const int plane = 5 * 3;
  for (int i = 0; i < plane; ++i) {
    EXPECT_EQ(image.bytes[i], gray.data[i]);
    EXPECT_EQ(image.bytes[plane + i], gray.data[i]);
    EXPECT_EQ(image.bytes[2 * plane + i], gray.data[i]);
  }

  // force_gray on a colour image: one plane, as OpenCV's grayscale decode.
  const cv::Mat bgr = TestImage(4, 6, 3);
  const caffe::Datum colour = EncodedDatum(bgr, ".png", 0);
  DecodeDatum(colour, DatumColor::kForceGray, "r", &image);
  const std::vector<uint8_t> bytes(colour.data().begin(), colour.data().end());
  ExpectChannelMajor(cv::imdecode(bytes, cv::IMREAD_GRAYSCALE), image);
}

TEST(Datum, DecodesEncodedJpegShape) {
  DatumImage image;
  DecodeDatum(EncodedDatum(TestImage(9, 11, 3), ".jpg", 3), DatumColor::kNative, "r", &image);
  EXPECT_EQ(image.channels, 3);
  EXPECT_EQ(image.height, 9);
  EXPECT_EQ(image.width, 11);
  EXPECT_EQ(image.label, 3);
}

TEST(Datum, ClearErrorsNameTheRecord) {
  const std::string where = "record '00000042' of some/db";
  DatumImage image;
  caffe::Datum datum;
  datum.set_channels(1);
  datum.set_height(2);
  datum.set_width(2);
  datum.set_data("abc");  // 3 bytes for 4 pixels
  std::string error = ErrorOf([&] { DecodeDatum(datum, DatumColor::kNative, where, &image); });
  EXPECT_NE(error.find(where), std::string::npos) << error;
  EXPECT_NE(error.find("should hold 4 bytes"), std::string::npos) << error;

  datum.clear_data();
  error = ErrorOf([&] { DecodeDatum(datum, DatumColor::kNative, where, &image); });
  EXPECT_NE(error.find("no pixels"), std::string::npos) << error;

  datum.add_float_data(1.f);
  error = ErrorOf([&] { DecodeDatum(datum, DatumColor::kNative, where, &image); });
  EXPECT_NE(error.find("float_data"), std::string::npos) << error;

  caffe::Datum zero;
  zero.set_channels(0);
  zero.set_height(2);
  zero.set_width(2);
  error = ErrorOf([&] { DecodeDatum(zero, DatumColor::kNative, where, &image); });
  EXPECT_NE(error.find("positive"), std::string::npos) << error;

  caffe::Datum junk;
  junk.set_encoded(true);
  junk.set_data("this is not an image");
  error = ErrorOf([&] { DecodeDatum(junk, DatumColor::kNative, where, &image); });
  EXPECT_NE(error.find(where), std::string::npos) << error;
  EXPECT_NE(error.find("cannot decode"), std::string::npos) << error;

  error = ErrorOf([&] { ParseDatum(std::string("\xff\xff\xff", 3), where, &datum); });
  EXPECT_NE(error.find(where), std::string::npos) << error;
  EXPECT_NE(error.find("not a valid caffe.Datum"), std::string::npos) << error;
}

}  // namespace test
}  // namespace dlcaffe
