// BpeTokenizer: the BPE rules on a small hand-made tokenizer.json, and
// agreement with Hugging Face's `tokenizers` on the tokenizer and the cases
// it encoded (tests/import/hf_models/generation/, written on the GPU host by
// tools/onnx/make_hf_tests.py --generation).
#include <gtest/gtest.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dlcaffe/data/bpe_tokenizer.hpp"
#include "dlcaffe/data/vocabulary.hpp"
#include "dlcaffe/error.hpp"
#include "util/error_of.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// GPT-2's byte alphabet, written out independently of the library's table:
// printable Latin-1 bytes are themselves, the rest U+0100 on, in byte order.
std::vector<std::string> ByteAlphabet() {
  std::vector<std::string> chars(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    chars[b] = EncodeUtf8(printable ? b : next++);
  }
  return chars;
}

std::string Quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// A tokenizer.json: the 256 byte tokens (id = byte), then `merged` tokens
// in order, `merges` as "a b" strings, and `extra` top-level JSON fields.
std::string WriteTokenizer(const std::vector<std::string>& merged,
                           const std::vector<std::string>& merges, const std::string& pre,
                           const std::string& extra = "", const std::string& normalizer = "null") {
  const std::vector<std::string> bytes = ByteAlphabet();
  std::string vocab;
  int id = 0;
  for (const std::string& t : bytes) {
    vocab += (id ? "," : "") + Quote(t) + ":" + std::to_string(id);
    ++id;
  }
  for (const std::string& t : merged) {
    vocab += "," + Quote(t) + ":" + std::to_string(id);
    ++id;
  }
  std::string merge_list;
  for (size_t i = 0; i < merges.size(); ++i) merge_list += (i ? "," : "") + Quote(merges[i]);
  const std::string json = "{\"version\":\"1.0\"," + extra + "\"normalizer\":" + normalizer + ",\"pre_tokenizer\":" + pre +
                           ",\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{" +
                           vocab + "},\"merges\":[" + merge_list + "]}}";
  const std::string path = TempDir() + "/tokenizer.json";
  std::ofstream(path) << json;
  return path;
}

const char kByteLevel[] = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}";

std::vector<int> Bytes(const std::string& s) {
  std::vector<int> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

TEST(BpeTokenizer, MergesTheLowestRankFirstEveryOccurrenceLeftToRight) {
  // 256: "aa", 257: "aaa", 258: "ab"; "a a" outranks "aa a", which outranks "a b".
  const BpeTokenizer t = BpeTokenizer::Load(
      WriteTokenizer({"aa", "aaa", "ab"}, {"a a", "aa a", "a b"}, kByteLevel));
  EXPECT_EQ(t.size(), 259);
  EXPECT_EQ(t.Encode("aaaa"), (std::vector<int>{256, 256}));  // aa|aa: no "aa aa"
  EXPECT_EQ(t.Encode("aaa"), (std::vector<int>{257}));        // aa|a, then aaa
  EXPECT_EQ(t.Encode("aab"), (std::vector<int>{256, 'b'}));   // "a a" first: ab never forms
  EXPECT_EQ(t.Encode("ab"), (std::vector<int>{258}));
  EXPECT_EQ(t.Encode("c"), Bytes("c"));
  EXPECT_TRUE(t.Encode("").empty());
}

TEST(BpeTokenizer, SplitsWordsAsGpt2BeforeMerging) {
  // "Ġa" merges a space into the word; a merge across words never applies.
  const std::string space = ByteAlphabet()[' '];
  const BpeTokenizer t = BpeTokenizer::Load(
      WriteTokenizer({space + "a", "ab", "a" + space}, {space + " a", "a b", "a " + space}, kByteLevel));
  // " a" is one word ("Ġa" = 256); in "a b" the space starts the next word,
  // so "aĠ" (258) never forms; numbers and punctuation are words of their own.
  EXPECT_EQ(t.Encode(" a"), (std::vector<int>{256}));
  EXPECT_EQ(t.Encode("a a"), (std::vector<int>{'a', 256}));
  EXPECT_EQ(t.Encode("ab12!"), (std::vector<int>{257, '1', '2', '!'}));
  EXPECT_EQ(t.Encode("it's"), (std::vector<int>{'i', 't', '\'', 's'}));
  // Trailing spaces: all but the last stay with each other, the last joins
  // the next word ("\s+(?!\S)").
  EXPECT_EQ(t.Encode("x   a"), (std::vector<int>{'x', ' ', ' ', 256}));
}

TEST(BpeTokenizer, DecodeInvertsEncodeForAnyUtf8) {
  const BpeTokenizer t = BpeTokenizer::Load(WriteTokenizer({}, {}, kByteLevel));
  for (const std::string& s :
       {std::string("plain text"), std::string("tab\tnew\nline\r\n"), std::string("naïve café — ✓ 日本語 🙂"),
        std::string("\x01\x7f control"), std::string("  lead and trail  ")}) {
    const std::vector<int> ids = t.Encode(s);
    EXPECT_EQ(ids, Bytes(s)) << s;  // no merges: one id per byte, id = byte
    EXPECT_EQ(t.Decode(ids), s);
  }
  EXPECT_TRUE(Contains(ErrorOf([&] { t.Encode("bad \xff utf-8"); }), "UTF-8"));
  EXPECT_TRUE(Contains(ErrorOf([&] { t.Decode({256}); }), "token id 256 is outside the vocabulary"));
}

TEST(BpeTokenizer, AddedTokensAreWholeIdsAnywhere) {
  const std::string added =
      "\"added_tokens\":[{\"id\":256,\"content\":\"<|end|>\",\"special\":true},"
      "{\"id\":257,\"content\":\"<|end|>x\",\"special\":true}],";
  const BpeTokenizer t = BpeTokenizer::Load(WriteTokenizer({}, {}, kByteLevel, added));
  EXPECT_EQ(t.size(), 258);
  EXPECT_EQ(t.AddedTokenId("<|end|>"), 256);
  EXPECT_EQ(t.Encode("a<|end|>b"), (std::vector<int>{'a', 256, 'b'}));
  EXPECT_EQ(t.Encode("<|end|>xy<|end|>"), (std::vector<int>{257, 'y', 256}));  // the longest
  EXPECT_EQ(t.Decode({'a', 256, 'b'}, false), "a<|end|>b");
  EXPECT_EQ(t.Decode({'a', 256, 'b'}), "ab");  // special tokens left out, as tokenizers' decode
}

TEST(BpeTokenizer, SequenceOfSplitAndByteLevelAsLlama3) {
  // The Split regex isolates digits one by one; ByteLevel only maps bytes.
  const std::string pre =
      "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\p{N}\"},"
      "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
      "\"use_regex\":false}]}";
  const BpeTokenizer t = BpeTokenizer::Load(WriteTokenizer({"12", "ab"}, {"1 2", "a b"}, pre));
  EXPECT_EQ(t.Encode("ab12"), (std::vector<int>{257, '1', '2'}));  // "1 2" cannot merge across pieces
  EXPECT_EQ(t.Encode("a b"), (std::vector<int>{'a', ' ', 'b'}));   // no regex: the space stays inside
}

TEST(BpeTokenizer, RefusesWhatItDoesNotFollowNamingTheFile) {
  EXPECT_TRUE(Contains(ErrorOf([] { BpeTokenizer::Load("/nonexistent/tokenizer.json"); }), "cannot open"));
  const std::string bad = TempDir() + "/bad.json";
  std::ofstream(bad) << "{\"model\": ";
  EXPECT_TRUE(Contains(ErrorOf([&] { BpeTokenizer::Load(bad); }), bad + ": not a valid JSON file"));
  const std::string wordpiece = TempDir() + "/wordpiece.json";
  std::ofstream(wordpiece) << "{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}";
  EXPECT_TRUE(Contains(ErrorOf([&] { BpeTokenizer::Load(wordpiece); }), "model.type is \"WordPiece\""));
  const std::string nfkc = WriteTokenizer({}, {}, kByteLevel, "", "{\"type\":\"NFKC\"}");
  EXPECT_TRUE(Contains(ErrorOf([&] { BpeTokenizer::Load(nfkc); }), "normalizer \"NFKC\" is not supported"));
  const BpeTokenizer nfc = BpeTokenizer::Load(WriteTokenizer({}, {}, kByteLevel, "", "{\"type\":\"NFC\"}"));
  EXPECT_EQ(nfc.Encode("caf\xc3\xa9"), Bytes("caf\xc3\xa9"));  // é (U+00E9): NFC already
  EXPECT_TRUE(Contains(ErrorOf([&] { nfc.Encode("cafe\xcc\x81"); }), "U+301"));  // e + combining acute
  const std::string no_byte_level =
      WriteTokenizer({}, {}, "{\"type\":\"Whitespace\"}");
  EXPECT_TRUE(Contains(ErrorOf([&] { BpeTokenizer::Load(no_byte_level); }),
                       "pre_tokenizer step 0 (Whitespace): this pre-tokenizer is not supported"));
}

// Hugging Face's `tokenizers` (0.23, on the GPU host) trained a byte-level
// BPE of 320 ids on the repository's Markdown and encoded these strings:
// every id and every decoded text must agree.
TEST(BpeTokenizer, AgreesWithHuggingFaceTokenizers) {
  const std::string dir = SourceDir() + "/tests/import/hf_models/hf_generation";
  const BpeTokenizer t = BpeTokenizer::Load(dir + "/tokenizer.json");
  EXPECT_EQ(t.size(), 320);
  EXPECT_EQ(t.AddedTokenId("<|endoftext|>"), 0);
  std::ifstream in(dir + "/tokenizer_cases.json");
  std::stringstream json;
  json << in.rdbuf();
  google::protobuf::ListValue cases;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &cases).ok());
  ASSERT_GE(cases.values_size(), 10);
  for (const auto& entry : cases.values()) {
    const auto& fields = entry.struct_value().fields();
    const std::string text = fields.at("text").string_value();
    std::vector<int> expected;
    for (const auto& id : fields.at("ids").list_value().values())
      expected.push_back(static_cast<int>(id.number_value()));
    const std::vector<int> ids = t.Encode(text);
    EXPECT_EQ(ids, expected) << "'" << text << "'";
    EXPECT_EQ(t.Decode(ids), fields.at("decoded").string_value()) << "'" << text << "'";
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
