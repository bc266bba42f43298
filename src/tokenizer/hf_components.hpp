#pragma once

// The pipeline stages of a Hugging Face tokenizer.json that tessera implements, each parsed
// from its JSON object (an unknown type or option is a TokenizerFileError naming the JSON
// path, e.g. "pre_tokenizer.pretokenizers[1].type"):
//  - normalizers: Sequence, NFC, NFD, NFKC, NFKD, Prepend, Replace (string or regex);
//  - pre-tokenizers: Sequence, Split (string or regex; Isolated, Removed, MergedWithPrevious,
//    MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space, use_regex with GPT-2's
//    pattern), Metaspace (replacement, prepend_scheme always/first/never, split);
//  - decoders: Sequence, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip.
// Immutable after parsing; safe to share between threads.

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {

// A problem with a tokenizer file's content, at `path` inside its JSON.
class TokenizerFileError : public std::runtime_error {
 public:
  TokenizerFileError(std::string path, const std::string& problem)
      : std::runtime_error(problem), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string apply(std::string text) const = 0;
};
// null JSON: none (nullptr).
std::unique_ptr<Normalizer> parse_normalizer(const nlohmann::json& j, const std::string& path);

// One piece of text on its way to the model; `first` when it starts the input (Metaspace's
// prepend_scheme "first").
struct Piece {
  std::string text;
  bool first = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual std::vector<Piece> apply(std::vector<Piece> pieces) const = 0;
  // Whether the model's vocabulary is in GPT-2's byte-level alphabet.
  virtual bool byte_level() const { return false; }
};
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const nlohmann::json& j, const std::string& path);

class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  virtual std::vector<std::string> apply(std::vector<std::string> tokens) const = 0;
};
std::unique_ptr<TokenDecoder> parse_decoder(const nlohmann::json& j, const std::string& path);

}  // namespace tessera
