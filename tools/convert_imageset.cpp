// convert_imageset: Caffe's tool that turns a folder of images and a list of
// them into an LMDB of caffe::Datum records, raw (C × H × W bytes, BGR as
// OpenCV reads them) or encoded (PNG/JPEG bytes), keyed "%08d_<path>" by list
// position and committed every 1000 records.
//
//   convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME
//
// LISTFILE lines are "relative/path.jpg LABEL"; the label follows the last
// space, so paths may contain spaces. As in Caffe, an image that cannot be
// read is reported (file and list line) and skipped; any other mistake stops
// the tool with one message and leaves no database behind.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "tool_main.hpp"
#include "dlcaffe/data/datum.hpp"
#include "dlcaffe/error.hpp"
#include "new_lmdb_dataset.hpp"

DEFINE_bool(gray, false, "When this option is on, treat images as grayscale ones");
DEFINE_bool(shuffle, false, "Randomly shuffle the order of images and their labels");
DEFINE_int64(shuffle_seed, -1,
             "With --shuffle: the seed of the order, for a database that is the same on "
             "every run; -1 (the default, as Caffe) draws a fresh order each time");
DEFINE_string(backend, "lmdb", "The backend for storing the result (lmdb)");
DEFINE_int32(resize_width, 0, "Width images are resized to");
DEFINE_int32(resize_height, 0, "Height images are resized to");
DEFINE_bool(check_size, false, "When this option is on, check that all the datum have the same size");
DEFINE_bool(encoded, false, "When this option is on, the encoded image will be save in datum");
DEFINE_string(encode_type, "", "Optional: What type should we encode the image as ('png','jpg',...).");

namespace dlcaffe {
namespace {

struct ListEntry {
  std::string path;  // relative to the root folder
  int label = 0;
  int line = 0;      // in the list file, for messages
};

struct Options {
  bool is_color = true;
  int resize_height = 0, resize_width = 0;  // both 0: keep the size
  bool encoded = false;
  std::string encode_type;                  // lower case; "" = the file's own
  bool check_size = false;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string TrimRight(std::string s) {
  while (!s.empty() && IsBlank(s.back())) s.pop_back();
  return s;
}

// "path LABEL", split at the last space (or tab), as Caffe splits it.
ListEntry ParseListLine(const std::string& line, const std::string& where) {
  const std::string text = TrimRight(line);
  const size_t split = text.find_last_of(" \t");
  DLC_REQUIRE(split != std::string::npos,
              where << ": '" << text << "' has no label; each line is 'path LABEL' "
                    << "(the label follows the last space)");
  ListEntry entry;
  entry.path = TrimRight(text.substr(0, split));
  DLC_REQUIRE(!entry.path.empty(), where << ": no image path before the label");
  const std::string label = text.substr(split + 1);
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(label.c_str(), &end, 10);
  DLC_REQUIRE(end != label.c_str() && *end == '\0' && errno == 0 && value >= INT_MIN &&
                  value <= INT_MAX,
              where << ": label '" << label << "' is not an integer (line: '" << text << "')");
  entry.label = static_cast<int>(value);
  return entry;
}

std::vector<ListEntry> ReadListFile(const std::string& path) {
  std::ifstream in(path);
  DLC_REQUIRE(in, "cannot open list file " << path);
  std::vector<ListEntry> entries;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (TrimRight(line).empty()) continue;
    ListEntry entry = ParseListLine(line, path + ":" + std::to_string(line_number));
    entry.line = line_number;
    entries.push_back(std::move(entry));
  }
  DLC_REQUIRE(!entries.empty(), "list file " << path
                                             << " lists no images (expected lines 'path LABEL')");
  return entries;
}

std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return Lower(path.substr(dot + 1));
}

// Whether the file is already in `format` (Caffe's matchExt: "jpeg" is jpg).
bool IsInFormat(const std::string& path, const std::string& format) {
  const std::string ext = Extension(path);
  return ext == format || (format == "jpg" && ext == "jpeg");
}

std::string ReadFileBytes(const std::string& path) {
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
ListedImage ReadListedImage(const std::string& file, const Options& options) {
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
void FillDatum(const ListedImage& image, int label, const Options& options,
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

std::string ShapeText(const DatumImage& image) {
  std::ostringstream text;
  text << image.channels << " x " << image.height << " x " << image.width;
  return text.str();
}

Options OptionsFromFlags() {
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
std::string RootPrefix(const std::string& root) {
  if (root.empty()) return root;
  std::error_code ec;
  DLC_REQUIRE(std::filesystem::exists(root, ec), "root folder " << root << " does not exist");
  DLC_REQUIRE(std::filesystem::is_directory(root, ec), "root folder " << root
                                                                      << " is not a directory");
  return root.back() == '/' ? root : root + "/";
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int ImagesPerSecond(size_t images, std::chrono::steady_clock::time_point start) {
  return static_cast<int>(images / std::max(SecondsSince(start), 1e-3));
}

void Convert(const std::string& root, const std::string& list_path, const std::string& db_path) {
  const Options options = OptionsFromFlags();
  const std::string prefix = RootPrefix(root);
  std::vector<ListEntry> entries = ReadListFile(list_path);
  if (FLAGS_shuffle) {
    LOG(INFO) << "Shuffling data";
    const uint64_t seed = FLAGS_shuffle_seed >= 0 ? static_cast<uint64_t>(FLAGS_shuffle_seed)
                                                  : std::random_device()();
    std::shuffle(entries.begin(), entries.end(), std::mt19937_64(seed));
  }
  LOG(INFO) << "A total of " << entries.size() << " images.";
  if (!options.encode_type.empty() && !FLAGS_encoded)
    LOG(INFO) << "encode_type specified, assuming encoded=true.";

  NewLmdbDataset db(db_path);
  const auto start = std::chrono::steady_clock::now();
  bool have_first = false;
  DatumImage first;  // --check_size compares every image with the first one
  std::string first_file;
  size_t skipped = 0;
  caffe::Datum datum;
  std::string value;
  char key_prefix[16];
  for (size_t line_id = 0; line_id < entries.size(); ++line_id) {
    const ListEntry& entry = entries[line_id];
    const std::string where = list_path + ":" + std::to_string(entry.line);
    const std::string file = prefix + entry.path;
    ListedImage image;
    try {
      image = ReadListedImage(file, options);
    } catch (const Error& e) {
      LOG(WARNING) << where << ": " << e.what() << "; skipped";
      ++skipped;
      continue;
    }
    if (options.check_size) {
      if (!have_first) {
        first = image.pixels;
        first_file = file;
        have_first = true;
      }
      DLC_REQUIRE(image.pixels.channels == first.channels && image.pixels.height == first.height &&
                      image.pixels.width == first.width,
                  where << ": --check_size: image " << file << " is " << ShapeText(image.pixels)
                        << " (channels x height x width) but the first image, " << first_file
                        << ", is " << ShapeText(first)
                        << "; --resize_width and --resize_height make them one size");
    }
    try {
      FillDatum(image, entry.label, options, file, &datum);
    } catch (const Error& e) {
      DLC_FAIL(where << ": " << file << ": " << e.what()
                     << (options.encode_type.empty() ? "; --encode_type picks a format" : ""));
    }
    std::snprintf(key_prefix, sizeof(key_prefix), "%08d_", static_cast<int>(line_id));
    datum.SerializeToString(&value);
    db.Put(key_prefix + entry.path, value);
    if (db.size() % NewLmdbDataset::kCommitEvery == 0) {
      LOG(INFO) << "Processed " << db.size() << " files.";
      LOG(INFO) << "Progress: " << line_id + 1 << " of " << entries.size() << " images, "
                << ImagesPerSecond(db.size(), start) << " images/s";
    }
  }
  DLC_REQUIRE(db.size() > 0, "none of the " << entries.size() << " images in " << list_path
                                            << " could be read (see the warnings above)");
  db.Finish();
  if (db.size() % NewLmdbDataset::kCommitEvery != 0)
    LOG(INFO) << "Processed " << db.size() << " files.";
  LOG(INFO) << "Wrote " << db.size() << " images to " << db_path << " in "
            << SecondsSince(start) << " s (" << ImagesPerSecond(db.size(), start)
            << " images/s)";
  if (skipped > 0)
    LOG(WARNING) << "Skipped " << skipped << " of " << entries.size()
                 << " images that could not be read (see the warnings above)";
}

}  // namespace
}  // namespace dlcaffe

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "convert_imageset",
      "Convert a set of images to the lmdb format used as input for dlcaffe and Caffe.\n"
      "Usage:\n"
      "    convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME\n"
      "LISTFILE lines are 'relative/path.jpg LABEL' (paths may contain spaces).",
      3, 3, [](const std::vector<std::string>& args) {
        dlcaffe::Convert(args[0], args[1], args[2]);
      });
}
