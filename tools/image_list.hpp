// What convert_imageset and convert_annoset share: Caffe's image flags,
// reading a listed image (kept as the file's own bytes where an encoded datum
// may store them) and filling its Datum, and the root folder and progress
// figures. Each tool defines the flags (DEFINE_*) and includes this once.
#pragma once
#include <gflags/gflags.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "caffe.pb.h"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/error.hpp"
#include "new_lmdb_dataset.hpp"
#include "tool_main.hpp"

DECLARE_bool(gray);
DECLARE_string(backend);
DECLARE_int32(resize_width);
DECLARE_int32(resize_height);
DECLARE_bool(check_size);
DECLARE_bool(encoded);
DECLARE_string(encode_type);

namespace dlcaffe {

struct Options {
  bool is_color = true;
  int resize_height = 0, resize_width = 0;  // both 0: keep the size
  bool encoded = false;
  std::string encode_type;                  // lower case; "" = the file's own
  bool check_size = false;
};

inline std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

inline bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

inline std::string TrimRight(std::string s) {
  while (!s.empty() && IsBlank(s.back())) s.pop_back();
  return s;
}

inline std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return Lower(path.substr(dot + 1));
}

// Whether the file is already in `format` (Caffe's matchExt: "jpeg" is jpg).
inline bool IsInFormat(const std::string& path, const std::string& format) {
  const std::string ext = Extension(path);
  return ext == format || (format == "jpg" && ext == "jpeg");
}

inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, "cannot read image " << path << " (missing or unreadable)");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One image as its datum will hold it: the decoded pixels (after any resize),
// and the file's own bytes when an encoded datum can store them unchanged.
struct ListedImage {
  DatumImage pixels;
  std::string file_bytes;
};

// Throws a dlcaffe::Error for a file that is missing or does not decode; the
// caller skips it.
inline ListedImage ReadListedImage(const std::string& file, const Options& options) {
  ListedImage image;
  if (options.encoded && options.resize_height == 0 &&
      (options.encode_type.empty() || IsInFormat(file, options.encode_type))) {
    // Caffe stores the file itself when no resize is asked. We also require
    // that it decodes to the asked channels, so that a gray JPEG in a colour
    // set becomes colour as in a raw database, and all records decode alike.
    std::string bytes = ReadFileBytes(file);
    caffe::Datum stored;
    stored.set_encoded(true);
    stored.set_data(bytes);
    DecodeDatum(stored, DatumColor::kNative, "image " + file, &image.pixels);
    if (image.pixels.channels == (options.is_color ? 3 : 1)) {
      image.file_bytes = std::move(bytes);
      return image;
    }
  }
  ReadImageFile(file, options.resize_height, options.resize_width, options.is_color,
                &image.pixels);
  return image;
}

// Caffe's datum: raw pixels with their shape, or encoded bytes and the flag
// (the file's own, or the pixels encoded as --encode_type, else in the
// format the file's extension names).
inline void FillDatum(const ListedImage& image, int label, const Options& options,
               const std::string& file, caffe::Datum* datum) {
  datum->Clear();
  datum->set_label(label);
  if (!options.encoded) {
    datum->set_channels(image.pixels.channels);
    datum->set_height(image.pixels.height);
    datum->set_width(image.pixels.width);
    datum->set_data(image.pixels.bytes.data(), image.pixels.bytes.size());
    return;
  }
  datum->set_encoded(true);
  if (!image.file_bytes.empty()) {
    datum->set_data(image.file_bytes);
    return;
  }
  const std::string format =
      options.encode_type.empty() ? Extension(file) : options.encode_type;
  DLC_REQUIRE(!format.empty(), "cannot tell the image format from the name");
  datum->set_data(EncodeImage(image.pixels, format));
}

inline Options OptionsFromFlags() {
  RequireLmdbBackend(FLAGS_backend, "--backend");
  DLC_REQUIRE(FLAGS_resize_width >= 0 && FLAGS_resize_height >= 0,
              "--resize_width and --resize_height cannot be negative");
  DLC_REQUIRE((FLAGS_resize_width == 0) == (FLAGS_resize_height == 0),
              "give both --resize_width and --resize_height (or neither); got "
                  << FLAGS_resize_width << " x " << FLAGS_resize_height);
  Options options;
  options.is_color = !FLAGS_gray;
  options.resize_height = FLAGS_resize_height;
  options.resize_width = FLAGS_resize_width;
  options.encode_type = Lower(FLAGS_encode_type);
  options.encoded = FLAGS_encoded || !options.encode_type.empty();
  options.check_size = FLAGS_check_size;
  DLC_REQUIRE(options.encode_type.empty() || CanEncodeImage(options.encode_type),
              "--encode_type=" << FLAGS_encode_type
                               << ": OpenCV cannot write that format (try png or jpg)");
  return options;
}

// Caffe appends list paths to ROOTFOLDER as they are; a missing final '/'
// would glue names together, so we add it.
inline std::string RootPrefix(const std::string& root) {
  if (root.empty()) return root;
  std::error_code ec;
  DLC_REQUIRE(std::filesystem::exists(root, ec), "root folder " << root << " does not exist");
  DLC_REQUIRE(std::filesystem::is_directory(root, ec), "root folder " << root
                                                                      << " is not a directory");
  return root.back() == '/' ? root : root + "/";
}

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline int ImagesPerSecond(size_t images, std::chrono::steady_clock::time_point start) {
  return static_cast<int>(images / std::max(SecondsSince(start), 1e-3));
}

}  // namespace dlcaffe
