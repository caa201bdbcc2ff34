// BpeTokenizer (bpe_tokenizer.hpp): tokenizer.json read as a protobuf Struct
// (protobuf parses JSON already), pre-tokenizer regexes by PCRE2.
#include "dlcaffe/data/bpe_tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

#include "dlcaffe/data/vocabulary.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  if (it == s.fields().end() || it->second.kind_case() == Value::kNullValue) return nullptr;
  return &it->second;
}

std::string StringField(const Struct& s, const std::string& name, const std::string& fallback) {
  const Value* v = Field(s, name);
  return v && v->kind_case() == Value::kStringValue ? v->string_value() : fallback;
}

bool BoolField(const Struct& s, const std::string& name, bool fallback) {
  const Value* v = Field(s, name);
  return v && v->kind_case() == Value::kBoolValue ? v->bool_value() : fallback;
}

// GPT-2's byte-to-character table: printable bytes stand for themselves, the
// others for the code points from U+0100 on, so that every token is
// printable text.
void ByteTable(std::string (&byte_to_char)[256]) {
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    byte_to_char[b] = EncodeUtf8(printable ? b : next++);
  }
}

// The regex ByteLevel splits by when use_regex is on (GPT-2's).
const char kByteLevelPattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

}  // namespace

struct BpeTokenizer::Regex {
  pcre2_code* code = nullptr;
  bool byte_level = false;        // a ByteLevel step (prefix space, then this regex if any)
  bool byte_level_regex = false;  // ByteLevel with use_regex
  ~Regex() {
    if (code) pcre2_code_free(code);
  }
};

BpeTokenizer::BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

namespace {

pcre2_code* CompileRegex(const std::string& pattern, const std::string& where) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    DLC_FAIL(where << ": the regex '" << pattern << "' does not compile at offset " << offset
                   << ": " << reinterpret_cast<const char*>(message));
  }
  return code;
}

// The pieces of `text` a split leaves: each match and each stretch between
// matches (tokenizers' Isolated behaviour).
std::vector<std::string> SplitIsolated(pcre2_code* code, const std::string& text) {
  std::vector<std::string> pieces;
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(code, nullptr);
  size_t at = 0, last = 0;
  while (at <= text.size()) {
    const int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at,
                               0, match, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match);
    if (span[1] == span[0]) {  // an empty match: step over one character
      at = span[0] + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
      continue;
    }
    if (span[0] > last) pieces.push_back(text.substr(last, span[0] - last));
    pieces.push_back(text.substr(span[0], span[1] - span[0]));
    last = at = span[1];
  }
  if (last < text.size()) pieces.push_back(text.substr(last));
  pcre2_match_data_free(match);
  return pieces;
}

}  // namespace

BpeTokenizer BpeTokenizer::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, path << ": cannot open the tokenizer");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  Struct root;
  const auto status = google::protobuf::util::JsonStringToMessage(bytes.str(), &root);
  DLC_REQUIRE(status.ok(), path << ": not a valid JSON file: " << status.ToString());

  BpeTokenizer t;
  t.path_ = path;
  ByteTable(t.byte_to_char_);
  for (int b = 0; b < 256; ++b) t.char_to_byte_[t.byte_to_char_[b]] = static_cast<unsigned char>(b);

  // model: BPE, its vocabulary and merges.
  const Value* model = Field(root, "model");
  DLC_REQUIRE(model && model->kind_case() == Value::kStructValue,
              path << ": no \"model\" object: not a tokenizers tokenizer.json");
  const Struct& m = model->struct_value();
  const std::string type = StringField(m, "type", "BPE");
  DLC_REQUIRE(type == "BPE", path << ": model.type is \"" << type
                                  << "\"; only byte-level BPE tokenizers are supported");
  DLC_REQUIRE(!BoolField(m, "byte_fallback", false),
              path << ": model.byte_fallback is on (a SentencePiece-style BPE); only byte-level "
                      "BPE tokenizers are supported");
  t.ignore_merges_ = BoolField(m, "ignore_merges", false);
  const Value* vocab = Field(m, "vocab");
  DLC_REQUIRE(vocab && vocab->kind_case() == Value::kStructValue,
              path << ": model.vocab is missing or not an object");
  auto set_token = [&](const std::string& token, double id_value, const std::string& field) {
    DLC_REQUIRE(id_value >= 0 && id_value < INT_MAX && id_value == static_cast<int>(id_value),
                path << ": " << field << ": the id of '" << token << "' is not a valid id");
    const int id = static_cast<int>(id_value);
    if (id >= static_cast<int>(t.tokens_.size())) t.tokens_.resize(id + 1);
    t.tokens_[id] = token;
    t.ids_[token] = id;
    return id;
  };
  for (const auto& [token, id] : vocab->struct_value().fields()) {
    DLC_REQUIRE(id.kind_case() == Value::kNumberValue,
                path << ": model.vocab: the id of '" << token << "' is not a number");
    set_token(token, id.number_value(), "model.vocab");
  }
  const Value* merges = Field(m, "merges");
  DLC_REQUIRE(merges && merges->kind_case() == Value::kListValue,
              path << ": model.merges is missing or not a list");
  int rank = 0;
  for (const Value& merge : merges->list_value().values()) {
    std::string a, b;
    if (merge.kind_case() == Value::kStringValue) {
      const std::string& s = merge.string_value();
      const size_t space = s.find(' ');
      DLC_REQUIRE(space != std::string::npos && space > 0 && space + 1 < s.size(),
                  path << ": model.merges[" << rank << "] '" << s << "' is not \"a b\"");
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else {
      DLC_REQUIRE(merge.kind_case() == Value::kListValue && merge.list_value().values_size() == 2,
                  path << ": model.merges[" << rank << "] is neither \"a b\" nor [a, b]");
      a = merge.list_value().values(0).string_value();
      b = merge.list_value().values(1).string_value();
    }
    t.merge_rank_.emplace(std::make_pair(a, b), rank++);
  }

  // added_tokens: whole ids, matched before anything else.
  std::vector<int> special_ids;
  if (const Value* added = Field(root, "added_tokens")) {
    DLC_REQUIRE(added->kind_case() == Value::kListValue, path << ": added_tokens is not a list");
    for (const Value& entry : added->list_value().values()) {
      DLC_REQUIRE(entry.kind_case() == Value::kStructValue,
                  path << ": added_tokens holds something that is not an object");
      const Struct& s = entry.struct_value();
      const std::string content = StringField(s, "content", "");
      const Value* id = Field(s, "id");
      DLC_REQUIRE(!content.empty() && id && id->kind_case() == Value::kNumberValue,
                  path << ": added_tokens: an entry without content or id");
      const int token_id = set_token(content, id->number_value(), "added_tokens");
      t.added_.emplace_back(content, token_id);
      if (BoolField(s, "special", false)) special_ids.push_back(token_id);
    }
    std::stable_sort(t.added_.begin(), t.added_.end(),
                     [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  }

  t.special_.assign(t.tokens_.size(), false);
  for (int id : special_ids) t.special_[id] = true;

  // normalizer: none or NFC.
  if (const Value* normalizer = Field(root, "normalizer")) {
    const std::string kind = normalizer->kind_case() == Value::kStructValue
                                 ? StringField(normalizer->struct_value(), "type", "")
                                 : "";
    DLC_REQUIRE(kind == "NFC", path << ": normalizer \"" << kind
                                    << "\" is not supported (none and NFC are)");
    t.nfc_ = true;
  }

  // pre_tokenizer: ByteLevel, or a Sequence of Splits and a ByteLevel.
  const Value* pre = Field(root, "pre_tokenizer");
  DLC_REQUIRE(pre && pre->kind_case() == Value::kStructValue,
              path << ": no pre_tokenizer; a byte-level BPE tokenizer has a ByteLevel one");
  std::vector<const Struct*> steps;
  if (StringField(pre->struct_value(), "type", "") == "Sequence") {
    const Value* list = Field(pre->struct_value(), "pretokenizers");
    DLC_REQUIRE(list && list->kind_case() == Value::kListValue,
                path << ": pre_tokenizer.pretokenizers is missing");
    for (const Value& v : list->list_value().values()) {
      DLC_REQUIRE(v.kind_case() == Value::kStructValue,
                  path << ": pre_tokenizer.pretokenizers holds something that is not an object");
      steps.push_back(&v.struct_value());
    }
  } else {
    steps.push_back(&pre->struct_value());
  }
  bool byte_level = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Struct& s = *steps[i];
    const std::string kind = StringField(s, "type", "");
    const std::string where = path + ": pre_tokenizer step " + std::to_string(i) + " (" + kind + ")";
    auto step = std::make_unique<Regex>();
    if (kind == "ByteLevel") {
      DLC_REQUIRE(!byte_level, where << ": a second ByteLevel");
      byte_level = true;
      step->byte_level = true;
      t.add_prefix_space_ = BoolField(s, "add_prefix_space", false);
      step->byte_level_regex = BoolField(s, "use_regex", true);
      if (step->byte_level_regex) step->code = CompileRegex(kByteLevelPattern, where);
    } else if (kind == "Split") {
      DLC_REQUIRE(!byte_level, where << ": a Split after ByteLevel is not supported");
      const std::string behavior = StringField(s, "behavior", "");
      DLC_REQUIRE(behavior == "Isolated" && !BoolField(s, "invert", false),
                  where << ": behavior \"" << behavior
                        << "\" (or invert) is not supported; Isolated is");
      const Value* pattern = Field(s, "pattern");
      DLC_REQUIRE(pattern && pattern->kind_case() == Value::kStructValue,
                  where << ": no pattern");
      const std::string regex = StringField(pattern->struct_value(), "Regex", "");
      const std::string literal = StringField(pattern->struct_value(), "String", "");
      DLC_REQUIRE(!regex.empty() || !literal.empty(), where << ": an empty pattern");
      std::string escaped;
      for (char c : literal) {
        if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) escaped += '\\';
        escaped += c;
      }
      step->code = CompileRegex(regex.empty() ? escaped : regex, where);
    } else {
      DLC_FAIL(where << ": this pre-tokenizer is not supported (ByteLevel and Split are)");
    }
    t.splits_.push_back(std::move(step));
  }
  DLC_REQUIRE(byte_level, path << ": the pre_tokenizer has no ByteLevel step: not a byte-level "
                                  "BPE tokenizer");
  if (const Value* decoder = Field(root, "decoder")) {
    const std::string kind = decoder->kind_case() == Value::kStructValue
                                 ? StringField(decoder->struct_value(), "type", "")
                                 : "";
    DLC_REQUIRE(kind == "ByteLevel",
                path << ": decoder \"" << kind << "\" is not supported (ByteLevel is)");
  }
  for (size_t id = 0; id < t.tokens_.size(); ++id)
    DLC_REQUIRE(!t.tokens_[id].empty() || t.ids_.empty(),
                path << ": no token has id " << id << " (ids must run from 0 without gaps)");
  return t;
}

int BpeTokenizer::AddedTokenId(const std::string& content) const {
  for (const auto& [text, id] : added_)
    if (text == content) return id;
  return -1;
}

std::vector<std::string> BpeTokenizer::PreTokenize(const std::string& text) const {
  std::vector<std::string> pieces = {text};
  for (const auto& step : splits_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step->byte_level && add_prefix_space_ && (piece.empty() || piece[0] != ' '))
        piece = " " + piece;
      if (!step->code) {
        next.push_back(piece);
        continue;
      }
      for (std::string& p : SplitIsolated(step->code, piece)) next.push_back(std::move(p));
    }
    pieces.swap(next);
  }
  // Bytes to the byte-level alphabet.
  for (std::string& piece : pieces) {
    std::string mapped;
    for (unsigned char b : piece) mapped += byte_to_char_[b];
    piece.swap(mapped);
  }
  return pieces;
}

void BpeTokenizer::AppendBpe(const std::string& piece, std::vector<int>* ids) const {
  auto cached = cache_.find(piece);
  if (cached != cache_.end()) {
    ids->insert(ids->end(), cached->second.begin(), cached->second.end());
    return;
  }
  std::vector<int> out;
  auto whole = ids_.find(piece);
  if (ignore_merges_ && whole != ids_.end()) {
    out.push_back(whole->second);
  } else {
    // One symbol per character, then the lowest-ranked adjacent pair merged
    // (every occurrence, left to right) until no pair is a merge.
    std::vector<std::string> symbols;
    for (const uint32_t c : DecodeUtf8(piece)) symbols.push_back(EncodeUtf8(c));
    while (symbols.size() > 1) {
      int best = INT_MAX;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        auto r = merge_rank_.find({symbols[i], symbols[i + 1]});
        if (r != merge_rank_.end()) best = std::min(best, r->second);
      }
      if (best == INT_MAX) break;
      std::vector<std::string> merged;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size()) {
          auto r = merge_rank_.find({symbols[i], symbols[i + 1]});
          if (r != merge_rank_.end() && r->second == best) {
            merged.push_back(symbols[i] + symbols[i + 1]);
            ++i;
            continue;
          }
        }
        merged.push_back(symbols[i]);
      }
      symbols.swap(merged);
    }
    for (const std::string& s : symbols) {
      auto id = ids_.find(s);
      DLC_REQUIRE(id != ids_.end(), path_ << ": the token '" << s << "' (from the piece '"
                                          << piece << "') is not in the vocabulary");
      out.push_back(id->second);
    }
  }
  ids->insert(ids->end(), out.begin(), out.end());
  cache_.emplace(piece, std::move(out));
}

std::vector<int> BpeTokenizer::Encode(const std::string& text) const {
  const std::vector<uint32_t> points = DecodeUtf8(text);  // throws naming bad UTF-8
  if (nfc_)
    for (uint32_t c : points)
      DLC_REQUIRE(c < 0x300, path_ << ": this tokenizer normalizes text to NFC, which is only "
                                      "done here for text below U+0300; the text has U+"
                                   << std::hex << c);
  std::vector<int> ids;
  // Stretches between added tokens (the longest match at the earliest place).
  size_t start = 0;
  while (start <= text.size()) {
    size_t at = std::string::npos;
    const std::pair<std::string, int>* hit = nullptr;
    for (const auto& added : added_) {
      const size_t found = text.find(added.first, start);
      if (found != std::string::npos && (at == std::string::npos || found < at)) {
        at = found;
        hit = &added;
      }
    }
    const size_t end = at == std::string::npos ? text.size() : at;
    if (end > start)
      for (const std::string& piece : PreTokenize(text.substr(start, end - start)))
        AppendBpe(piece, &ids);
    if (!hit) break;
    ids.push_back(hit->second);
    start = at + hit->first.size();
  }
  return ids;
}

std::string BpeTokenizer::Decode(const std::vector<int>& ids, bool skip_special_tokens) const {
  std::string text;
  for (int id : ids) {
    DLC_REQUIRE(id >= 0 && id < size(),
                "token id " << id << " is outside the vocabulary of " << path_ << " (" << size()
                            << " ids)");
    if (skip_special_tokens && special_[id]) continue;
    // As tokenizers' ByteLevel decoder: every character of the alphabet is
    // its byte, any other stays as it is (added tokens are mostly ASCII).
    for (const uint32_t c : DecodeUtf8(tokens_[id])) {
      const std::string ch = EncodeUtf8(c);
      auto byte = char_to_byte_.find(ch);
      if (byte != char_to_byte_.end()) text += static_cast<char>(byte->second);
      else text += ch;
    }
  }
  return text;
}

}  // namespace dlcaffe
