// tools/convert_text and the Vocabulary it writes: every window of both
// databases against windows cut here from the files, the per-file held-out
// split, stride, byte level, float ids past 256 tokens, the vocabulary's
// escapes, and the errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "caffe.pb.h"
#include "dlcaffe/data/lmdb_database.hpp"
#include "dlcaffe/data/vocabulary.hpp"
#include "dlcaffe/error.hpp"
#include "util/error_of.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Every record of a database, in key order, as token ids (rows 0 and 1).
std::vector<std::vector<int>> ReadWindows(const std::string& path, int window, bool* as_bytes) {
  std::vector<std::vector<int>> windows;
  auto db = LmdbDatabase::OpenForReading(path);
  LmdbCursor cursor(db);
  do {
    caffe::Datum datum;
    EXPECT_TRUE(datum.ParseFromArray(cursor.value().data(), cursor.value().size()));
    EXPECT_EQ(datum.channels(), 2);
    EXPECT_EQ(datum.height(), 1);
    EXPECT_EQ(datum.width(), window);
    std::vector<int> ids;
    *as_bytes = !datum.data().empty();
    for (unsigned char c : datum.data()) ids.push_back(c);
    for (float f : datum.float_data()) ids.push_back(static_cast<int>(f));
    EXPECT_EQ(ids.size(), 2u * window);
    windows.push_back(ids);
    cursor.Next();
  } while (cursor.epoch() == 0);
  return windows;
}

// Windows of `ids`: rows [i, i + window) and [i + 1, i + window + 1).
std::vector<std::vector<int>> Cut(const std::vector<int>& ids, int window, int stride) {
  std::vector<std::vector<int>> windows;
  for (size_t i = 0; i + window + 1 <= ids.size(); i += stride) {
    std::vector<int> w(ids.begin() + i, ids.begin() + i + window);
    w.insert(w.end(), ids.begin() + i + 1, ids.begin() + i + window + 1);
    windows.push_back(w);
  }
  return windows;
}

}  // namespace

TEST(ConvertText, WindowsOfEachSplitMatchTheTextCutHere) {
  const fs::path dir = TempDir();
  // Two files (one in a sub-folder, one reached twice through a link), a
  // binary file that must be skipped; multi-byte characters.
  const std::string a = "Caf\xC3\xA9 au lait, na\xC3\xAFve \xE2\x82\xAC-prices.\n\tTabs\\ too. ";
  const std::string b = "The quick brown fox jumps over the lazy dog. 0123456789\n";
  Write(dir / "in/a.txt", a + a + a);
  Write(dir / "in/sub/b.txt", b + b);
  fs::create_symlink(dir / "in/a.txt", dir / "in/z_link.txt");
  Write(dir / "in/index.dat", std::string("\x01\x00\x02", 3));
  const int window = 7, stride = 3;
  const ToolResult r = RunTool("convert_text", "--window=7 --stride=3 --holdout=0.2 '" +
                                                   (dir / "in").string() + "' '" +
                                                   (dir / "out").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "index.dat: binary")) << r.output;
  EXPECT_TRUE(Contains(r.output, "the same file as one read already")) << r.output;
  EXPECT_TRUE(Contains(r.output, "Read 2 files")) << r.output;
  EXPECT_TRUE(Contains(r.output, "skipped 1 binary and 1 reached again through a link"))
      << r.output;

  // The vocabulary: the distinct code points, in order.
  const Vocabulary vocab = Vocabulary::Load((dir / "out/vocab.txt").string());
  std::map<uint32_t, int> points;
  for (uint32_t c : DecodeUtf8(a + b)) points[c] = 0;
  ASSERT_EQ(vocab.size(), static_cast<int>(points.size()));
  int id = 0;
  for (auto& [c, i] : points) i = id++;
  const auto encode = [&](const std::string& text) {
    std::vector<int> ids;
    for (uint32_t c : DecodeUtf8(text)) ids.push_back(points.at(c));
    return ids;
  };
  EXPECT_EQ(vocab.Encode(a + b), encode(a + b));
  EXPECT_EQ(vocab.Decode(vocab.Encode(a + b)), a + b);

  // Per file, in path order (a.txt, sub/b.txt): the last 20% held out.
  const std::vector<int> ia = encode(a + a + a), ib = encode(b + b);
  const size_t ha = std::llround(ia.size() * 0.2), hb = std::llround(ib.size() * 0.2);
  std::vector<int> train(ia.begin(), ia.end() - ha), test(ia.end() - ha, ia.end());
  train.insert(train.end(), ib.begin(), ib.end() - hb);
  test.insert(test.end(), ib.end() - hb, ib.end());
  bool as_bytes = false;
  EXPECT_EQ(ReadWindows((dir / "out/train_lmdb").string(), window, &as_bytes),
            Cut(train, window, stride));
  EXPECT_TRUE(as_bytes);
  EXPECT_EQ(ReadWindows((dir / "out/test_lmdb").string(), window, &as_bytes),
            Cut(test, window, stride));

  // The output exists now: a second run refuses, naming it.
  const ToolResult again = RunTool("convert_text", "'" + (dir / "in").string() + "' '" +
                                                       (dir / "out").string() + "'");
  ExpectCleanToolError(again, "convert_text", "exist already");
}

TEST(ConvertText, ByteLevelAndFloatIdsPastTwoHundredFiftySixTokens) {
  const fs::path dir = TempDir();
  std::string wide;  // 300 distinct characters: ids need floats
  for (uint32_t c = 0x100; c < 0x100 + 300; ++c) wide += EncodeUtf8(c);
  Write(dir / "wide.txt", wide);
  ToolResult r = RunTool("convert_text", "--window=5 --holdout=0 '" + (dir / "wide.txt").string() +
                                             "' '" + (dir / "wide").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  bool as_bytes = true;
  std::vector<int> ids(300);
  for (int i = 0; i < 300; ++i) ids[i] = i;
  EXPECT_EQ(ReadWindows((dir / "wide/train_lmdb").string(), 5, &as_bytes), Cut(ids, 5, 5));
  EXPECT_FALSE(as_bytes);
  EXPECT_FALSE(fs::exists(dir / "wide/test_lmdb"));  // --holdout=0: nothing held out
  EXPECT_TRUE(Contains(r.output, "no test_lmdb (--holdout=0)")) << r.output;

  const std::string bytes = std::string("A\xFF\x80 b\n", 6) + "\x01z";
  Write(dir / "bytes.bin", bytes + bytes);
  r = RunTool("convert_text", "--level=byte --window=3 --holdout=0.25 '" +
                                  (dir / "bytes.bin").string() + "' '" + (dir / "bytes").string() +
                                  "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Vocabulary vocab = Vocabulary::Load((dir / "bytes/vocab.txt").string());
  EXPECT_EQ(vocab.size(), 256);
  EXPECT_EQ(vocab.level(), Vocabulary::Level::kByte);
  std::vector<int> all;
  for (unsigned char c : bytes + bytes) all.push_back(c);
  EXPECT_EQ(vocab.Encode(bytes + bytes), all);
  const std::vector<int> train(all.begin(), all.end() - 4);
  EXPECT_EQ(ReadWindows((dir / "bytes/train_lmdb").string(), 3, &as_bytes), Cut(train, 3, 3));
}

TEST(Vocabulary, FileEscapesRoundTripAndBadFilesAreNamed) {
  const fs::path dir = TempDir();
  const std::string text = std::string("a b\n\t\r\\\x07\x7F") + "\xC3\xA9";
  const Vocabulary vocab = Vocabulary::FromText(Vocabulary::Level::kChar, text);
  vocab.Save((dir / "v.txt").string());
  std::ifstream in(dir / "v.txt");
  const std::string saved((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(saved, "# dlcaffe vocabulary: level=char size=10\n\\x07\n\\t\n\\n\n\\r\n \n\\\\\na\n"
                   "b\n\\x7f\n\xC3\xA9\n");
  const Vocabulary loaded = Vocabulary::Load((dir / "v.txt").string());
  EXPECT_EQ(loaded.Encode(text), vocab.Encode(text));
  EXPECT_EQ(loaded.Decode(loaded.Encode(text)), text);
  EXPECT_NE(ErrorOf([&] { vocab.Encode("z"); }).find("'z' (U+007A) at byte offset 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { vocab.Encode("a\xE2\x82\xAC"); })
                .find("'\xE2\x82\xAC' (U+20AC) at byte offset 1"),
            std::string::npos);
  // The library's message is for any caller (dlcaffe generate's prompt too):
  // no convert_text flag in it.
  const std::string invalid = ErrorOf([&] { vocab.Encode("a\xC3"); });
  EXPECT_NE(invalid.find("invalid UTF-8 at byte offset 1"), std::string::npos) << invalid;
  EXPECT_EQ(invalid.find("--level"), std::string::npos) << invalid;
  EXPECT_THROW(vocab.Decode(10), Error);

  Write(dir / "bad_header.txt", "# something else\na\n");
  EXPECT_NE(ErrorOf([&] { Vocabulary::Load((dir / "bad_header.txt").string()); })
                .find("bad_header.txt:1: not a dlcaffe vocabulary header"),
            std::string::npos);
  Write(dir / "short.txt", "# dlcaffe vocabulary: level=char size=3\na\nb\n");
  EXPECT_NE(ErrorOf([&] { Vocabulary::Load((dir / "short.txt").string()); })
                .find("the file ends after 2"),
            std::string::npos);
  Write(dir / "order.txt", "# dlcaffe vocabulary: level=char size=2\nb\na\n");
  EXPECT_NE(ErrorOf([&] { Vocabulary::Load((dir / "order.txt").string()); })
                .find("order.txt:3: tokens must be distinct and in code-point order"),
            std::string::npos);
  Write(dir / "escape.txt", "# dlcaffe vocabulary: level=char size=1\n\\q\n");
  EXPECT_NE(ErrorOf([&] { Vocabulary::Load((dir / "escape.txt").string()); })
                .find("escape.txt:2: unknown escape"),
            std::string::npos);
  const auto load_error = [&](const std::string& name, const std::string& text) {
    Write(dir / name, text);
    return ErrorOf([&] { Vocabulary::Load((dir / name).string()); });
  };
  for (const char* size : {"size=2abc", "size=99999999999", "size=-2", "size=", "size=2 x"})
    EXPECT_NE(load_error("size.txt", std::string("# dlcaffe vocabulary: level=char ") + size +
                                         "\na\nb\n")
                  .find("size.txt:1: not a dlcaffe vocabulary header"),
              std::string::npos)
        << size;
  EXPECT_NE(load_error("bytes.txt", "# dlcaffe vocabulary: level=byte size=2\n\\x00\n\\x01\n")
                .find("bytes.txt:1: a byte-level vocabulary has the 256 byte values"),
            std::string::npos);
  EXPECT_NE(load_error("dup.txt", "# dlcaffe vocabulary: level=char size=2\na\na\n")
                .find("dup.txt:3: tokens must be distinct"),
            std::string::npos);
  EXPECT_NE(load_error("long.txt", "# dlcaffe vocabulary: level=char size=1\na\n\nb\n")
                .find("long.txt:4: more lines than the header's 1 tokens"),
            std::string::npos);
  // Lines ended "\r\n" (the file edited on Windows) read as the same tokens.
  Write(dir / "crlf.txt", "# dlcaffe vocabulary: level=char size=3\r\n\\r\r\n \r\na\r\n");
  const Vocabulary crlf = Vocabulary::Load((dir / "crlf.txt").string());
  EXPECT_EQ(crlf.Decode({0, 1, 2}), "\r a");
}

TEST(Vocabulary, ByteLevelSavesEveryByteEscapedAndLoadsItBack) {
  const fs::path dir = TempDir();
  const Vocabulary vocab = Vocabulary::FromText(Vocabulary::Level::kByte, "");
  ASSERT_EQ(vocab.size(), 256);
  vocab.Save((dir / "v.txt").string());
  std::ifstream in(dir / "v.txt", std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 257u);
  EXPECT_EQ(lines[0], "# dlcaffe vocabulary: level=byte size=256");
  EXPECT_EQ(lines[1 + 0x00], "\\x00");
  EXPECT_EQ(lines[1 + '\n'], "\\n");
  EXPECT_EQ(lines[1 + ' '], " ");
  EXPECT_EQ(lines[1 + 'A'], "A");
  EXPECT_EQ(lines[1 + 0x7F], "\\x7f");
  EXPECT_EQ(lines[1 + 0xC3], "\\xc3");
  const Vocabulary loaded = Vocabulary::Load((dir / "v.txt").string());
  EXPECT_EQ(loaded.level(), Vocabulary::Level::kByte);
  std::string all;
  std::vector<int> ids;
  for (int b = 0; b < 256; ++b) {
    all += static_cast<char>(b);
    ids.push_back(b);
    EXPECT_EQ(loaded.Decode(b), std::string(1, static_cast<char>(b)));
  }
  EXPECT_EQ(loaded.Encode(all), ids);
  EXPECT_EQ(loaded.Decode(ids), all);
}

TEST(ConvertText, MistakesEndInOneMessage) {
  const fs::path dir = TempDir();
  Write(dir / "short.txt", "tiny");
  Write(dir / "latin1.txt", "caf\xE9 and more text here");
  fs::create_directories(dir / "empty");
  const auto run = [&](const std::string& args) { return RunTool("convert_text", args); };
  const std::string out = " '" + (dir / "out").string() + "'";
  ExpectCleanToolError(run("'" + (dir / "missing").string() + "'" + out), "convert_text",
                       "does not exist");
  ExpectCleanToolError(run("'" + (dir / "empty").string() + "'" + out), "convert_text",
                       "holds no text file");
  ExpectCleanToolError(run("'" + (dir / "latin1.txt").string() + "'" + out), "convert_text",
                       "latin1.txt: invalid UTF-8 at byte offset 3 (--level=byte takes");
  ExpectCleanToolError(run("--window=0 '" + (dir / "short.txt").string() + "'" + out),
                       "convert_text", "--window must be at least 1");
  ExpectCleanToolError(run("--holdout=1 '" + (dir / "short.txt").string() + "'" + out),
                       "convert_text", "--holdout must be in [0, 1)");
  ExpectCleanToolError(run("--level=word '" + (dir / "short.txt").string() + "'" + out),
                       "convert_text", "--level must be 'char' or 'byte'");
  ExpectCleanToolError(run("--window=8 '" + (dir / "short.txt").string() + "'" + out),
                       "convert_text", "too few for one window of 8");
  ExpectCleanToolError(run("--backend=leveldb '" + (dir / "short.txt").string() + "'" + out),
                       "convert_text", "leveldb");
  EXPECT_FALSE(fs::exists(dir / "out/train_lmdb"));
}

}  // namespace test
}  // namespace dlcaffe
