#include "dlcaffe/data/datum.hpp"

#include <glog/logging.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstring>
#include <fstream>

#include "data/datum_mat.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

bool FileReadable(const std::string& path) { return std::ifstream(path).good(); }

void CheckDimensions(const caffe::Datum& datum, const std::string& where) {
  DLC_REQUIRE(datum.channels() > 0 && datum.height() > 0 && datum.width() > 0,
              where << ": datum has shape " << datum.channels() << " x " << datum.height()
                    << " x " << datum.width() << "; every dimension must be positive");
}

void DecodeEncoded(const caffe::Datum& datum, DatumColor color, const std::string& where,
                   DatumImage* image) {
  const std::string& bytes = datum.data();
  DLC_REQUIRE(!bytes.empty(), where << ": encoded datum holds no image bytes");
  int flag = cv::IMREAD_ANYCOLOR;  // Caffe's DecodeDatumToCVMatNative
  if (color == DatumColor::kForceColor) flag = cv::IMREAD_COLOR;
  if (color == DatumColor::kForceGray) flag = cv::IMREAD_GRAYSCALE;
  const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8UC1,
                        const_cast<char*>(bytes.data()));
  cv::Mat decoded;
  try {
    decoded = cv::imdecode(encoded, flag);
  } catch (const cv::Exception& e) {
    // OpenCV refuses, before allocating, an image whose header claims more
    // than OPENCV_IO_MAX_IMAGE_PIXELS (default 2^30) pixels or a side over
    // OPENCV_IO_MAX_IMAGE_WIDTH/HEIGHT (2^20): say so in words.
    const std::string what = e.what();
    DLC_REQUIRE(what.find("CV_IO_MAX_IMAGE") == std::string::npos,
                where << ": the encoded image's header claims a size over OpenCV's decoding "
                         "limit (OPENCV_IO_MAX_IMAGE_PIXELS, default 2^30 pixels; "
                         "OPENCV_IO_MAX_IMAGE_WIDTH/HEIGHT, default 2^20); "
                         "a corrupt record or not a training image");
    DLC_FAIL(where << ": cannot decode the encoded image: " << what);
  }
  DLC_REQUIRE(!decoded.empty(), where << ": cannot decode the encoded image ("
                                      << bytes.size() << " bytes; not a JPEG/PNG?)");
  DLC_REQUIRE(decoded.depth() == CV_8U,
              where << ": encoded image decodes to a depth other than 8 bits");
  PixelsFromMat(decoded, image);
}

}  // namespace

// Copies an 8-bit OpenCV image into `image` (its label untouched). OpenCV
// keeps pixels interleaved (H×W×C); Caffe's blobs are C×H×W.
void PixelsFromMat(const cv::Mat& mat, DatumImage* image) {
  image->channels = mat.channels();
  image->height = mat.rows;
  image->width = mat.cols;
  image->is_float = false;
  image->floats.clear();
  image->bytes.resize(image->count());
  const int channels = image->channels, plane = image->height * image->width;
  for (int h = 0; h < image->height; ++h) {
    const uint8_t* row = mat.ptr<uint8_t>(h);
    for (int w = 0; w < image->width; ++w) {
      for (int c = 0; c < channels; ++c) {
        image->bytes[c * plane + h * image->width + w] = row[w * channels + c];
      }
    }
  }
}

// The inverse of PixelsFromMat: C×H×W bytes back to an interleaved image.
cv::Mat MatFromPixels(const DatumImage& image) {
  CHECK(!image.is_float) << "only uint8 images are encoded";
  const int channels = image.channels, plane = image.height * image.width;
  cv::Mat mat(image.height, image.width, CV_8UC(channels));
  for (int h = 0; h < image.height; ++h) {
    uint8_t* row = mat.ptr<uint8_t>(h);
    for (int w = 0; w < image.width; ++w) {
      for (int c = 0; c < channels; ++c) {
        row[w * channels + c] = image.bytes[c * plane + h * image.width + w];
      }
    }
  }
  return mat;
}


void ParseDatum(std::string_view serialized, const std::string& where, caffe::Datum* datum) {
  DLC_REQUIRE(datum->ParseFromArray(serialized.data(), static_cast<int>(serialized.size())),
              where << ": not a valid caffe.Datum (" << serialized.size()
                    << " bytes; corrupt database?)");
}

void DecodeDatum(const caffe::Datum& datum, DatumColor color, const std::string& where,
                 DatumImage* image) {
  image->label = datum.label();
  image->bytes.clear();
  image->floats.clear();
  if (datum.encoded()) {
    DecodeEncoded(datum, color, where, image);
    return;
  }
  CheckDimensions(datum, where);
  image->channels = datum.channels();
  image->height = datum.height();
  image->width = datum.width();
  const size_t expected = image->count();
  if (!datum.data().empty()) {
    DLC_REQUIRE(datum.data().size() == expected,
                where << ": datum of shape " << image->channels << " x " << image->height
                      << " x " << image->width << " should hold " << expected
                      << " bytes of pixels, holds " << datum.data().size());
    image->is_float = false;
    image->bytes.assign(datum.data().begin(), datum.data().end());
    return;
  }
  DLC_REQUIRE(datum.float_data_size() > 0, where << ": datum holds no pixels "
                                                    "(neither data nor float_data)");
  DLC_REQUIRE(static_cast<size_t>(datum.float_data_size()) == expected,
              where << ": datum of shape " << image->channels << " x " << image->height
                    << " x " << image->width << " should hold " << expected
                    << " float_data values, holds " << datum.float_data_size());
  image->is_float = true;
  image->floats.assign(datum.float_data().begin(), datum.float_data().end());
}

void ReadImageFile(const std::string& path, int new_height, int new_width, bool is_color,
                   DatumImage* image) {
  // Checked first: OpenCV would log a warning of its own for a missing file.
  DLC_REQUIRE(FileReadable(path), "cannot read image " << path << " (missing or unreadable)");
  cv::Mat mat;
  try {
    mat = cv::imread(path, is_color ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
    DLC_REQUIRE(!mat.empty(), "cannot read image " << path << " (not an image OpenCV decodes)");
    if (new_height > 0 && new_width > 0) {
      cv::Mat resized;
      cv::resize(mat, resized, cv::Size(new_width, new_height));  // bilinear, as Caffe
      mat = resized;
    }
  } catch (const cv::Exception& e) {
    DLC_FAIL("cannot read image " << path << ": " << e.what());
  }
  PixelsFromMat(mat, image);
}

std::string EncodeImage(const DatumImage& image, const std::string& format) {
  DLC_REQUIRE(CanEncodeImage(format), "cannot encode images as '" << format
                                          << "': OpenCV has no writer for it (try png or jpg)");
  std::vector<uchar> encoded;
  try {
    DLC_REQUIRE(cv::imencode("." + format, MatFromPixels(image), encoded),
                "cannot encode a " << image.channels << " x " << image.height << " x "
                                   << image.width << " image as " << format);
  } catch (const cv::Exception& e) {
    DLC_FAIL("cannot encode an image as " << format << ": " << e.what());
  }
  return std::string(encoded.begin(), encoded.end());
}

bool CanEncodeImage(const std::string& format) {
  try {
    return !format.empty() && cv::haveImageWriter("." + format);
  } catch (const cv::Exception&) {
    return false;
  }
}

}  // namespace dlcaffe
