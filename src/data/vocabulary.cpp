// Vocabulary (vocabulary.hpp): UTF-8, the vocab.txt format.
#include "dlcaffe/data/vocabulary.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

std::vector<uint32_t> DecodeUtf8(const std::string& text, const std::string& where) {
  std::vector<uint32_t> points;
  points.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char lead = text[i];
    int extra = 0;
    uint32_t point = lead, least = 0;
    if (lead >= 0xF0 && lead <= 0xF4) extra = 3, point = lead & 0x07, least = 0x10000;
    else if (lead >= 0xE0) extra = 2, point = lead & 0x0F, least = 0x800;
    else if (lead >= 0xC2) extra = 1, point = lead & 0x1F, least = 0x80;
    const bool bad_lead = lead >= 0x80 && (lead < 0xC2 || lead > 0xF4);
    bool ok = !bad_lead;
    for (int k = 1; ok && k <= extra; ++k) {
      if (i + k >= text.size() || (static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      point = (point << 6) | (text[i + k] & 0x3F);
    }
    ok = ok && point >= least && point <= 0x10FFFF && !(point >= 0xD800 && point <= 0xDFFF);
    DLC_REQUIRE(ok, where << ": invalid UTF-8 at byte offset " << i);
    points.push_back(point);
    i += extra + 1;
  }
  return points;
}

std::string EncodeUtf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

namespace {

const char kHeader[] = "# dlcaffe vocabulary:";
// More tokens than Unicode has code points cannot be a vocabulary.
constexpr long kMaxTokens = 0x110000;

// One line of vocab.txt without its end: a file edited on Windows ends lines
// in "\r\n" (a token's own \r is always escaped, never literal).
bool ReadLine(std::istream& in, std::string* line) {
  if (!std::getline(in, *line)) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

// "size=N" with N a whole number in [1, kMaxTokens]; -1 otherwise.
long ParseSize(const std::string& field) {
  if (field.rfind("size=", 0) != 0 || field.size() == 5 || field.size() > 5 + 7) return -1;
  long size = 0;
  for (size_t i = 5; i < field.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(field[i]))) return -1;
    size = size * 10 + (field[i] - '0');
  }
  return size >= 1 && size <= kMaxTokens ? size : -1;
}

// A token as one line of vocab.txt.
std::string Escape(const std::string& token, Vocabulary::Level level) {
  std::string line;
  for (unsigned char c : token) {
    if (c == '\n') line += "\\n";
    else if (c == '\t') line += "\\t";
    else if (c == '\r') line += "\\r";
    else if (c == '\\') line += "\\\\";
    else if (c < 0x20 || c == 0x7F || (level == Vocabulary::Level::kByte && c >= 0x80)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      line += hex;
    } else {
      line += static_cast<char>(c);
    }
  }
  return line;
}

std::string Unescape(const std::string& line, const std::string& where) {
  std::string token;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      token += line[i];
      continue;
    }
    DLC_REQUIRE(i + 1 < line.size(), where << ": a lone '\\' at the end of the line");
    const char e = line[++i];
    if (e == 'n') token += '\n';
    else if (e == 't') token += '\t';
    else if (e == 'r') token += '\r';
    else if (e == '\\') token += '\\';
    else if (e == 'x' && i + 2 < line.size() && std::isxdigit((unsigned char)line[i + 1]) &&
             std::isxdigit((unsigned char)line[i + 2])) {
      token += static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      DLC_FAIL(where << ": unknown escape '\\" << e << "' (known: \\n \\t \\r \\\\ \\xNN)");
    }
  }
  return token;
}

// Unicode's name for a code point: U+ and at least four upper-case hex digits.
std::string CodePointName(uint32_t c) {
  char name[16];
  std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(c));
  return name;
}

}  // namespace

Vocabulary Vocabulary::FromText(Level level, const std::string& text) {
  Vocabulary v;
  v.level_ = level;
  if (level == Level::kByte) {
    for (int b = 0; b < 256; ++b) v.tokens_.push_back(std::string(1, static_cast<char>(b)));
    return v;
  }
  const std::vector<uint32_t> points = DecodeUtf8(text);
  std::set<uint32_t> distinct(points.begin(), points.end());
  v.code_points_.assign(distinct.begin(), distinct.end());
  for (uint32_t c : v.code_points_) v.tokens_.push_back(EncodeUtf8(c));
  return v;
}

Vocabulary Vocabulary::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, "cannot open the vocabulary " << path);
  std::string header;
  ReadLine(in, &header);
  std::istringstream fields(header.substr(std::min(header.size(), sizeof(kHeader) - 1)));
  std::string level_field, size_field, extra;
  fields >> level_field >> size_field >> extra;
  const long size = ParseSize(size_field);
  DLC_REQUIRE(header.rfind(kHeader, 0) == 0 &&
                  (level_field == "level=char" || level_field == "level=byte") && size > 0 &&
                  extra.empty(),
              path << ":1: not a dlcaffe vocabulary header (want '" << kHeader
                   << " level=char|byte size=N'), got '" << header << "'");
  Vocabulary v;
  v.level_ = level_field == "level=byte" ? Level::kByte : Level::kChar;
  DLC_REQUIRE(v.level_ == Level::kChar || size == 256,
              path << ":1: a byte-level vocabulary has the 256 byte values, the header says size="
                   << size);
  std::string line;
  for (int id = 0; id < size; ++id) {
    const std::string where = path + ":" + std::to_string(id + 2);
    DLC_REQUIRE(ReadLine(in, &line),
                path << ": the header says " << size << " tokens, the file ends after " << id);
    const std::string token = Unescape(line, where);
    if (v.level_ == Level::kByte) {
      DLC_REQUIRE(token.size() == 1 && static_cast<unsigned char>(token[0]) == id,
                  where << ": byte-level token " << id << " must be that byte");
    } else {
      const std::vector<uint32_t> point = DecodeUtf8(token, where);
      DLC_REQUIRE(point.size() == 1, where << ": a token must be one character, got '" << line
                                           << "'");
      DLC_REQUIRE(v.code_points_.empty() || point[0] > v.code_points_.back(),
                  where << ": tokens must be distinct and in code-point order");
      v.code_points_.push_back(point[0]);
    }
    v.tokens_.push_back(token);
  }
  // Blank lines may follow the tokens; anything else means a wrong count.
  for (int number = size + 2; ReadLine(in, &line); ++number)
    DLC_REQUIRE(line.empty(), path << ":" << number << ": more lines than the header's " << size
                                   << " tokens");
  return v;
}

void Vocabulary::Save(const std::string& path) const {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    DLC_REQUIRE(out, "cannot write " << temporary);
    out << kHeader << " level=" << (level_ == Level::kByte ? "byte" : "char")
        << " size=" << tokens_.size() << "\n";
    for (const std::string& token : tokens_) out << Escape(token, level_) << "\n";
    out.flush();
    DLC_REQUIRE(out, "cannot write " << temporary);
  }
  DLC_REQUIRE(std::rename(temporary.c_str(), path.c_str()) == 0,
              "cannot rename " << temporary << " to " << path);
}

std::vector<int> Vocabulary::Encode(const std::string& text) const {
  std::vector<int> ids;
  if (level_ == Level::kByte) {
    for (unsigned char c : text) ids.push_back(c);
    return ids;
  }
  const std::vector<uint32_t> points = DecodeUtf8(text);
  size_t offset = 0;
  for (uint32_t c : points) {
    const auto it = std::lower_bound(code_points_.begin(), code_points_.end(), c);
    DLC_REQUIRE(it != code_points_.end() && *it == c,
                "the character '" << Escape(EncodeUtf8(c), level_) << "' (" << CodePointName(c)
                                  << ") at byte offset " << offset
                                  << " of the text is not in the vocabulary");
    ids.push_back(static_cast<int>(it - code_points_.begin()));
    offset += EncodeUtf8(c).size();
  }
  return ids;
}

const std::string& Vocabulary::Decode(int id) const {
  DLC_REQUIRE(id >= 0 && id < size(),
              "token id " << id << " is outside the vocabulary of " << size());
  return tokens_[id];
}

std::string Vocabulary::Decode(const std::vector<int>& ids) const {
  std::string text;
  for (int id : ids) text += Decode(id);
  return text;
}

}  // namespace dlcaffe
