// convert_text: a text file, or a folder of them, into LMDB databases of
// fixed-length windows of token ids for a language model (models/char_gpt),
// with a held-out share and the vocabulary written beside them.
//
//   convert_text [FLAGS] INPUT OUTPUT_DIR
//
// Writes OUTPUT_DIR/train_lmdb, OUTPUT_DIR/test_lmdb (not with --holdout=0)
// and OUTPUT_DIR/vocab.txt.
// Tokens are characters (Unicode code points of UTF-8 text) or bytes. From
// each file, its last --holdout share of tokens goes to the held-out text,
// the rest to the training text; each is the files' parts in path order.
// A record is a caffe::Datum of 2 x 1 x window: row 0 the tokens at
// [i, i + window), row 1 those at [i + 1, i + window + 1), the next token
// of each (a net slices them apart). Windows start every --stride tokens.
// Ids are stored as bytes (`data`) when the vocabulary has at most 256
// tokens, else as floats (`float_data`).
//
// In a folder, files holding a NUL byte (binary, e.g. the fortunes package's
// .dat indexes) are skipped and reported; links are followed, and a file
// reached twice is read once.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/vocabulary.hpp"
#include "dlcaffe/error.hpp"
#include "new_lmdb_dataset.hpp"
#include "tool_main.hpp"

DEFINE_string(level, "char", "Tokens: 'char' (Unicode characters of UTF-8 text) or 'byte'");
DEFINE_int32(window, 256, "Tokens per record (the positions a model sees)");
DEFINE_int32(stride, 0, "Tokens between the starts of successive windows (0: the window)");
DEFINE_double(holdout, 0.05, "The share of each file, at its end, held out for testing");
DEFINE_bool(shuffle, false, "Randomly shuffle the order of the training windows");
DEFINE_string(backend, "lmdb", "The backend for storing the result (lmdb)");

namespace dlcaffe {
namespace {

namespace fs = std::filesystem;

struct TextFile {
  std::string path;
  std::string text;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, "cannot read " << path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The text files of INPUT, in path order; counts the files skipped.
std::vector<TextFile> ReadInput(const std::string& input, size_t* binary, size_t* duplicates) {
  DLC_REQUIRE(fs::exists(input), "the input " << input << " does not exist");
  std::vector<TextFile> files;
  if (!fs::is_directory(input)) {
    files.push_back({input, ReadFile(input)});
    return files;
  }
  std::vector<fs::path> paths;
  for (const auto& entry :
       fs::recursive_directory_iterator(input, fs::directory_options::follow_directory_symlink))
    if (fs::is_regular_file(entry.path())) paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());
  std::set<fs::path> seen;
  for (const fs::path& path : paths) {
    if (!seen.insert(fs::canonical(path)).second) {
      LOG(INFO) << "Skipping " << path.string() << ": the same file as one read already";
      ++*duplicates;
      continue;
    }
    std::string text = ReadFile(path);
    if (text.find('\0') != std::string::npos) {
      LOG(INFO) << "Skipping " << path.string() << ": binary (it holds a NUL byte)";
      ++*binary;
      continue;
    }
    files.push_back({path.string(), std::move(text)});
  }
  DLC_REQUIRE(!files.empty(), "the folder " << input << " holds no text file");
  return files;
}

double EntropyBits(const std::vector<int>& tokens, int vocabulary) {
  std::vector<double> counts(vocabulary, 0.0);
  for (int id : tokens) counts[id] += 1;
  double entropy = 0;
  for (double c : counts)
    if (c > 0) entropy -= c / tokens.size() * std::log2(c / tokens.size());
  return entropy;
}

// The windows of `tokens` into a new database at `path`.
size_t WriteWindows(const std::vector<int>& tokens, const std::string& path, int window,
                    int stride, bool as_bytes, bool shuffle) {
  std::vector<size_t> starts;
  for (size_t i = 0; i + window + 1 <= tokens.size(); i += stride) starts.push_back(i);
  if (shuffle) {
    LOG(INFO) << "Shuffling the training windows";
    std::shuffle(starts.begin(), starts.end(), std::mt19937_64(1701));
  }
  NewLmdbDataset db(path);
  caffe::Datum datum;
  datum.set_channels(2);
  datum.set_height(1);
  datum.set_width(window);
  datum.set_label(0);
  std::string value;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t i = starts[k];
    datum.clear_data();
    datum.clear_float_data();
    if (as_bytes) {
      std::string bytes(2 * size_t(window), '\0');
      for (int row = 0; row < 2; ++row)
        for (int t = 0; t < window; ++t)
          bytes[row * size_t(window) + t] = static_cast<char>(tokens[i + row + t]);
      datum.set_data(bytes);
    } else {
      for (int row = 0; row < 2; ++row)
        for (int t = 0; t < window; ++t)
          datum.add_float_data(static_cast<float>(tokens[i + row + t]));
    }
    datum.SerializeToString(&value);
    char key[32];
    std::snprintf(key, sizeof key, "%08zu", k);
    db.Put(key, value);
    if ((k + 1) % 10000 == 0) LOG(INFO) << "Processed " << k + 1 << " windows.";
  }
  db.Finish();
  return starts.size();
}

void ConvertText(const std::vector<std::string>& args) {
  RequireLmdbBackend(FLAGS_backend, "--backend");
  DLC_REQUIRE(FLAGS_level == "char" || FLAGS_level == "byte",
              "--level must be 'char' or 'byte', got '" << FLAGS_level << "'");
  DLC_REQUIRE(FLAGS_window >= 1, "--window must be at least 1, got " << FLAGS_window);
  DLC_REQUIRE(FLAGS_stride >= 0, "--stride must be >= 0, got " << FLAGS_stride);
  DLC_REQUIRE(FLAGS_holdout >= 0 && FLAGS_holdout < 1,
              "--holdout must be in [0, 1), got " << FLAGS_holdout);
  const int window = FLAGS_window, stride = FLAGS_stride ? FLAGS_stride : FLAGS_window;
  const std::string& input = args[0];
  const fs::path out = args[1];
  const std::string train_path = (out / "train_lmdb").string(),
                    test_path = (out / "test_lmdb").string();
  DLC_REQUIRE(!fs::exists(train_path) && !fs::exists(test_path),
              "the databases in " << out.string() << " exist already (train_lmdb, test_lmdb); "
                                     "remove them or choose another folder");
  const auto start = std::chrono::steady_clock::now();
  size_t binary = 0, duplicates = 0;
  const std::vector<TextFile> files = ReadInput(input, &binary, &duplicates);
  const Vocabulary::Level level =
      FLAGS_level == "byte" ? Vocabulary::Level::kByte : Vocabulary::Level::kChar;
  std::string all;
  for (const TextFile& file : files) {
    if (level == Vocabulary::Level::kChar) {
      try {
        DecodeUtf8(file.text, file.path);  // names the file
      } catch (const Error& e) {
        DLC_FAIL(e.what() << " (--level=byte takes text that is not UTF-8)");
      }
    }
    all += file.text;
  }
  const Vocabulary vocabulary = Vocabulary::FromText(level, all);
  LOG(INFO) << "Read " << files.size() << " files, " << all.size() << " bytes"
            << (binary + duplicates > 0
                    ? "; skipped " + std::to_string(binary) + " binary and " +
                          std::to_string(duplicates) + " reached again through a link"
                    : std::string());
  LOG(INFO) << "Vocabulary: " << vocabulary.size() << " tokens (" << FLAGS_level << " level)";

  std::vector<int> train, test;
  for (const TextFile& file : files) {
    const std::vector<int> ids = vocabulary.Encode(file.text);
    const size_t held = static_cast<size_t>(std::llround(ids.size() * FLAGS_holdout));
    train.insert(train.end(), ids.begin(), ids.end() - held);
    test.insert(test.end(), ids.end() - held, ids.end());
  }
  LOG(INFO) << "Tokens: " << train.size() << " for training, " << test.size() << " held out";
  DLC_REQUIRE(train.size() >= size_t(window) + 1,
              "the training text has " << train.size() << " tokens, too few for one window of "
                                       << window << " (and its next token)");
  DLC_REQUIRE(FLAGS_holdout == 0 || test.size() >= size_t(window) + 1,
              "the held-out text has " << test.size() << " tokens, too few for one window of "
                                       << window << "; lower --window or raise --holdout");
  LOG(INFO) << "Unigram entropy of the training text: " << EntropyBits(train, vocabulary.size())
            << " bits per token";
  fs::create_directories(out);
  const bool as_bytes = vocabulary.size() <= 256;
  const size_t train_windows =
      WriteWindows(train, train_path, window, stride, as_bytes, FLAGS_shuffle);
  // No held-out text, no test database (an empty LMDB could not be read).
  const size_t test_windows =
      FLAGS_holdout > 0 ? WriteWindows(test, test_path, window, stride, as_bytes, false) : 0;
  vocabulary.Save((out / "vocab.txt").string());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LOG(INFO) << "Training windows: " << train_windows << ", held-out windows: " << test_windows
            << " (2 x 1 x " << window << ", ids as " << (as_bytes ? "bytes" : "floats")
            << "), in " << seconds << " s";
  LOG(INFO) << "Wrote " << train_path << ", "
            << (FLAGS_holdout > 0 ? test_path : "no test_lmdb (--holdout=0)") << " and "
            << (out / "vocab.txt").string();
}

}  // namespace
}  // namespace dlcaffe

int main(int argc, char** argv) {
  return dlcaffe::ToolMain(
      argc, argv, "convert_text",
      "Turns a text file or a folder of them into LMDB databases of token windows\n"
      "for a language model, with the vocabulary.\n"
      "Usage:\n"
      "    convert_text [FLAGS] INPUT OUTPUT_DIR\n"
      "Writes OUTPUT_DIR/train_lmdb, OUTPUT_DIR/test_lmdb (unless --holdout=0) and\n"
      "OUTPUT_DIR/vocab.txt.",
      2, 2, dlcaffe::ConvertText);
}
