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
    DLC_REQUIRE(ok, where << ": invalid UTF-8 at byte offset " << i
                          << " (use --level=byte for text that is not UTF-8)");
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
  std::getline(in, header);
  std::istringstream fields(header.substr(std::min(header.size(), sizeof(kHeader) - 1)));
  std::string level_field, size_field;
  fields >> level_field >> size_field;
  int size = -1;
  if (size_field.rfind("size=", 0) == 0) size = std::atoi(size_field.c_str() + 5);
  DLC_REQUIRE(header.rfind(kHeader, 0) == 0 &&
                  (level_field == "level=char" || level_field == "level=byte") && size > 0,
              path << ":1: not a dlcaffe vocabulary header (want '" << kHeader
                   << " level=char|byte size=N'), got '" << header << "'");
  Vocabulary v;
  v.level_ = level_field == "level=byte" ? Level::kByte : Level::kChar;
  std::string line;
  for (int id = 0; id < size; ++id) {
    const std::string where = path + ":" + std::to_string(id + 2);
    DLC_REQUIRE(std::getline(in, line),
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
  DLC_REQUIRE(!std::getline(in, line) || line.empty(),
              path << ": more lines than the header's " << size << " tokens");
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
                "the character '" << Escape(EncodeUtf8(c), level_) << "' (U+" << std::hex << c
                                  << std::dec << ") at byte offset " << offset
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
