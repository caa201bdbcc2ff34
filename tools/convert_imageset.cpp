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
#include "image_list.hpp"

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

std::string ShapeText(const DatumImage& image) {
  std::ostringstream text;
  text << image.channels << " x " << image.height << " x " << image.width;
  return text.str();
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
