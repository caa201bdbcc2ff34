// The token vocabulary of a character- or byte-level language model
// (tools/convert_text writes it beside the databases; `dlcaffe generate`
// reads it). Char level: the distinct Unicode code points of the text, ids in
// code-point order. Byte level: the 256 byte values, id = byte.
//
// vocab.txt: a header "# dlcaffe vocabulary: level=char size=N", then token
// i on line i + 2, as UTF-8, with \n, \t, \r, \\ and \xNN (other control
// bytes; in byte level also bytes >= 0x80) escaped. Spaces are literal.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlcaffe {

class Vocabulary {
 public:
  enum class Level { kChar, kByte };

  // The vocabulary of `text` (char level: its code points; it throws naming
  // the byte offset of invalid UTF-8).
  static Vocabulary FromText(Level level, const std::string& text);
  // Reads vocab.txt; errors name the file and line.
  static Vocabulary Load(const std::string& path);
  // Writes vocab.txt atomically (a temporary file renamed).
  void Save(const std::string& path) const;

  Level level() const { return level_; }
  int size() const { return static_cast<int>(tokens_.size()); }
  // Token ids of `text`; throws naming the offset of a character that is not
  // in the vocabulary, or of invalid UTF-8.
  std::vector<int> Encode(const std::string& text) const;
  // The text of one token or of several.
  const std::string& Decode(int id) const;
  std::string Decode(const std::vector<int>& ids) const;

 private:
  Level level_ = Level::kChar;
  std::vector<std::string> tokens_;    // id -> UTF-8 (char) or one byte
  std::vector<uint32_t> code_points_;  // id -> code point (char level), sorted
};

// The Unicode code points of UTF-8 text; throws naming `where` and the byte
// offset of the first invalid sequence.
std::vector<uint32_t> DecodeUtf8(const std::string& text, const std::string& where = "the text");
// One code point as UTF-8.
std::string EncodeUtf8(uint32_t code_point);

}  // namespace dlcaffe
