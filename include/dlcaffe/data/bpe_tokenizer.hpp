// A byte-level BPE tokenizer read from a Hugging Face tokenizer.json (the
// file `tokenizers` and transformers save beside GPT-2, LLaMA 3, Qwen2 and
// most causal LMs), so that `dlcaffe generate` speaks a model's own tokens.
//
// What it follows of the file, as `tokenizers` does:
//   added_tokens   matched first, as they are, anywhere in the text (the
//                  earliest, then the longest); each is one id (special
//                  tokens like <|endoftext|>). Their lstrip/rstrip and
//                  single_word flags are not followed.
//   normalizer     none, or NFC (accepted for text whose code points are all
//                  below U+0300, which NFC leaves as it is; other text is
//                  refused: no Unicode tables here).
//   pre_tokenizer  ByteLevel (GPT-2's split by regex, add_prefix_space) or a
//                  Sequence of Split {Regex, Isolated} and ByteLevel without
//                  its regex (LLaMA 3, Qwen2). The regexes are the file's own,
//                  run by PCRE2 (Unicode classes, lookahead).
//   model          BPE: vocab, merges ("a b" or ["a", "b"]), ignore_merges.
//   decoder        ByteLevel.
// Anything else is refused with the file and the field that says it.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dlcaffe {

class BpeTokenizer {
 public:
  // Reads tokenizer.json; errors name the file and the field.
  static BpeTokenizer Load(const std::string& path);
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // The number of ids (the largest id + 1).
  int size() const { return static_cast<int>(tokens_.size()); }
  // Token ids of UTF-8 text; throws on invalid UTF-8.
  std::vector<int> Encode(const std::string& text) const;
  // The text of ids (bytes of partial UTF-8 sequences are kept as they are,
  // so that a token can be printed as soon as it is made). Special tokens
  // (<|endoftext|>) are left out unless asked for, as tokenizers' decode.
  std::string Decode(const std::vector<int>& ids, bool skip_special_tokens = true) const;
  // An added token's id by its content, or -1.
  int AddedTokenId(const std::string& content) const;

 private:
  struct Regex;
  BpeTokenizer();
  std::vector<std::string> PreTokenize(const std::string& text) const;
  void AppendBpe(const std::string& piece, std::vector<int>* ids) const;

  std::string path_;
  std::vector<std::string> tokens_;  // id -> token (byte-level alphabet)
  std::unordered_map<std::string, int> ids_;
  std::map<std::pair<std::string, std::string>, int> merge_rank_;
  std::vector<std::pair<std::string, int>> added_;  // content, id: longest first
  std::vector<bool> special_;                       // id -> a special added token
  std::vector<std::unique_ptr<Regex>> splits_;      // applied in turn (Isolated)
  bool nfc_ = false;
  bool add_prefix_space_ = false;
  bool ignore_merges_ = false;
  std::string byte_to_char_[256];                   // GPT-2's bytes_to_unicode
  std::unordered_map<std::string, unsigned char> char_to_byte_;
  // Pieces already split into ids (text repeats words): Encode is not
  // thread-safe.
  mutable std::unordered_map<std::string, std::vector<int>> cache_;
};

}  // namespace dlcaffe
