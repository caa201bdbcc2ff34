// Decoding caffe::Datum records (raw uint8 pixels in `data`, float pixels in
// `float_data`, or an encoded JPEG/PNG image) and image files, always into
// Caffe's channel-major C×H×W layout (colour images keep OpenCV's BGR channel
// order, as Caffe's do); and encoding such images for encoded records.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dlcaffe/caffe.pb.h"

namespace dlcaffe {

// How an encoded image is decoded (TransformationParameter force_color /
// force_gray). Raw and float datums keep their channels whatever the mode.
enum class DatumColor { kNative, kForceColor, kForceGray };

// One decoded image: either uint8 pixels (`bytes`) or float pixels (`floats`),
// channels × height × width of them.
struct DatumImage {
  int channels = 0;
  int height = 0;
  int width = 0;
  bool is_float = false;
  std::vector<uint8_t> bytes;
  std::vector<float> floats;
  int label = 0;
  size_t count() const { return size_t(channels) * height * width; }
};

// Parses a serialized Datum; `where` names the record in the error
// ("record 00000012 of db/path").
void ParseDatum(std::string_view serialized, const std::string& where, caffe::Datum* datum);

// Decodes the datum's pixels. Throws a dlcaffe::Error (prefixed with `where`)
// for a datum without pixels, with a pixel count that does not match its
// channels × height × width, or with bytes that do not decode as an image.
void DecodeDatum(const caffe::Datum& datum, DatumColor color, const std::string& where,
                 DatumImage* image);

// Reads an image file (JPEG, PNG, anything OpenCV decodes) as Caffe's
// ReadImageToCVMat: 3-channel BGR when `is_color`, else 1-channel gray,
// resized (bilinear) to new_height × new_width when both are positive. The
// label is left as it was. Throws a dlcaffe::Error naming `path` for a file
// that is missing or does not decode.
void ReadImageFile(const std::string& path, int new_height, int new_width, bool is_color,
                   DatumImage* image);

// Encodes uint8 `image` as an image file of `format` ("png", "jpg", any
// extension OpenCV writes), for encoded datums (convert_imageset --encoded).
// Throws a dlcaffe::Error for a format OpenCV cannot write.
std::string EncodeImage(const DatumImage& image, const std::string& format);
// Whether OpenCV can write `format` (as EncodeImage takes it).
bool CanEncodeImage(const std::string& format);

}  // namespace dlcaffe
