#pragma once

// Tokenizers of the live LLM server (docs/llm-serve.md#tokenizers): text <-> token ids.
//  - ByteTokenizer (the default): one token per byte, id = the byte's value (0..255); the
//    model's vocabulary must hold at least 256 ids. Ids >= 256 decode to nothing.
//  - BpeTokenizer: a Hugging Face `tokenizer.json` whose model is byte-level BPE (GPT-2,
//    Llama-3 style: `model.type` "BPE" with a ByteLevel pre-tokenizer or decoder). Other
//    model types (WordPiece, Unigram, WordLevel) and non-byte-level BPE (SentencePiece
//    style, Metaspace) are refused with an error naming the file and the field.
//    Pre-tokenisation splits like GPT-2's pattern on ASCII classes (an optional leading
//    space, then a run of letters, of digits or of other symbols; whitespace runs), a
//    documented simplification of the regular expression.
//
// Immutable after construction; safe to share between threads.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  // The bytes of one token (possibly part of a UTF-8 character).
  virtual std::string decode_token(int64_t id) const = 0;
  std::string decode(const std::vector<int64_t>& ids) const;
};

class ByteTokenizer final : public Tokenizer {
 public:
  std::string name() const override { return "byte"; }
  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode_token(int64_t id) const override;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // Reads a tokenizer.json; SpecError naming the file and field on anything it cannot use.
  static std::unique_ptr<BpeTokenizer> load(const std::filesystem::path& file);
  std::string name() const override { return "bpe"; }
  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode_token(int64_t id) const override;
  std::size_t vocab_size() const { return id_to_token_.size(); }

 private:
  std::vector<int64_t> encode_chunk(const std::string& bytes) const;

  std::unordered_map<std::string, int64_t> token_to_id_;  // byte-level unicode strings
  std::vector<std::string> id_to_token_;                  // raw bytes of each id
  std::unordered_map<std::string, int> merge_rank_;       // "left\x01right" -> rank
  std::vector<std::pair<std::string, int64_t>> added_;    // added tokens, matched verbatim
};

// The tokenizer of a checkpoint: DIR/tokenizer.json when it exists, else the byte
// tokenizer. Checks that every id it can produce is below `vocab`.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir, int64_t vocab);

// Whether `s` is valid UTF-8.
bool valid_utf8(const std::string& s);

}  // namespace tessera
