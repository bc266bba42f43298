#pragma once

// Tokenizers of the LLM engine (docs/llm-serve.md#tokenizers): text <-> token ids.
//  - ByteTokenizer (when a checkpoint has no tokenizer.json): one token per byte, id = the
//    byte's value (0..255); the model's vocabulary must hold at least 256 ids. Ids >= 256
//    decode to nothing.
//  - HfTokenizer (tokenizer/hf_tokenizer.hpp): a Hugging Face tokenizer.json with a BPE
//    model, byte-level (GPT-2, Llama-3, Qwen) or SentencePiece-style (Llama-2, Mistral:
//    Metaspace, byte fallback), with the file's normalizer, pre-tokenizer, added tokens,
//    post-processor and decoder chain; its ids equal Hugging Face's (tests/tokenizer_test.cpp
//    checks golden ids made by Hugging Face's tokenizers).
//  - TextStream: decoded text of a growing id sequence, piece by piece, never splitting a
//    UTF-8 character (what a streamed answer sends).
//
// Tokenizers are immutable after construction and safe to share between threads; a
// TextStream belongs to one caller.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/unicode_text.hpp"

namespace tessera {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string name() const = 0;
  // `text` (UTF-8; invalid bytes are read as U+FFFD) as ids; `add_special_tokens`: with the
  // tokens the post-processor adds (e.g. Llama's beginning-of-sequence token).
  virtual std::vector<int64_t> encode(const std::string& text, bool add_special_tokens) const = 0;
  std::vector<int64_t> encode(const std::string& text) const { return encode(text, false); }
  // The text of `ids` through the decoder chain (valid UTF-8; a character whose bytes are
  // not all there becomes U+FFFD); `skip_special_tokens` leaves special tokens out.
  virtual std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const = 0;
  std::string decode(const std::vector<int64_t>& ids) const { return decode(ids, false); }
  // decode({id}).
  std::string decode_token(int64_t id) const { return decode({id}); }
  // The id of a token's text (an added or vocabulary token), if it has one.
  virtual std::optional<int64_t> token_id(const std::string& token) const = 0;
  // One more than the largest id this tokenizer produces.
  virtual int64_t vocab_size() const = 0;
};

class ByteTokenizer final : public Tokenizer {
 public:
  std::string name() const override { return "byte"; }
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens) const override;
  using Tokenizer::encode;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override;
  using Tokenizer::decode;
  std::optional<int64_t> token_id(const std::string& token) const override;
  int64_t vocab_size() const override { return 256; }
};

// The tokenizer of a checkpoint: DIR/tokenizer.json when it exists, else the byte
// tokenizer. Checks that every id it can produce is below `vocab`. A file it cannot use is
// a SpecError naming the file and the JSON field.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir, int64_t vocab);

// The decoded text of ids arriving one by one: push() returns the text the new id
// completes (possibly empty, e.g. the first bytes of a character that spans tokens), and
// the concatenation of every push() and finish() equals tokenizer.decode(all ids) (for
// decoders whose output does not change retroactively, which holds for the ones tessera
// implements). Holds a window of the last few ids, not the whole sequence.
class TextStream {
 public:
  explicit TextStream(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}
  std::string push(int64_t id);
  // The text still held back (an incomplete character at the end becomes U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int64_t> ids_;  // the window: ids_[0, read_) are already sent
  std::size_t read_ = 0;
};

}  // namespace tessera
