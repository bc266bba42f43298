#pragma once

// HfTokenizer: a Hugging Face tokenizer.json (docs/llm-serve.md#tokenizers). Encoding runs
// the file's pipeline as Hugging Face's tokenizers does: the added tokens are cut out of
// the text first (longest leftmost match; lstrip, rstrip and single_word honoured), then
// each remaining section is normalized, pre-tokenized and split into BPE tokens, and with
// add_special_tokens the post-processor (TemplateProcessing) adds its tokens. Decoding
// maps ids to token strings and runs the decoder chain. What the file asks for and tessera
// does not implement (another model type, a normalizer, pre-tokenizer or decoder it does
// not know, a continuing_subword_prefix, dropout) is refused with the JSON path named.
// Immutable after load; safe to share between threads.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/hf_components.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

class HfTokenizer final : public Tokenizer {
 public:
  // SpecError naming the file and the JSON path of the problem.
  static std::unique_ptr<HfTokenizer> load(const std::filesystem::path& file);
  // The same from the file's text; `name` stands for the file in errors.
  static std::unique_ptr<HfTokenizer> parse(const std::string& text, const std::string& name);

  std::string name() const override { return "bpe"; }
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens) const override;
  using Tokenizer::encode;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override;
  using Tokenizer::decode;
  std::optional<int64_t> token_id(const std::string& token) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_token_.size()); }
  bool is_special(int64_t id) const { return special_ids_.count(id) > 0; }

 private:
  struct AddedToken {
    std::string content;
    int64_t id;
    bool special, lstrip, rstrip, single_word, normalized;
  };
  struct TemplateItem {
    bool sequence;  // the text's ids; else the special token ids below
    std::vector<int64_t> ids;
  };

  HfTokenizer() = default;
  // Appends the ids of `text` (no added tokens in it) to `out`.
  void encode_section(std::string text, bool first, std::vector<int64_t>& out) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<TokenDecoder> decoder_;
  std::vector<AddedToken> added_;       // longest content first
  std::vector<TemplateItem> template_;  // empty: the post-processor adds nothing
  std::vector<std::string> id_to_token_;
  std::unordered_map<std::string, int64_t> added_ids_;
  std::unordered_set<int64_t> special_ids_, added_id_set_;
};

}  // namespace tessera
