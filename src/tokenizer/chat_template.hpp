#pragma once

// A model's chat template (docs/llm-serve.md#chat-templates): the Jinja `chat_template` of
// its tokenizer_config.json, rendered as transformers' apply_chat_template does (messages,
// add_generation_prompt, the special tokens bos_token / eos_token / unk_token / pad_token
// as variables) by tessera's Jinja interpreter (tokenizer/jinja.hpp). Immutable after
// load; apply() is safe from several threads.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/jinja.hpp"

namespace tessera {

struct ChatMessage {
  std::string role;
  std::string content;
};

class ChatTemplate {
 public:
  // DIR/tokenizer_config.json's template, or nullopt when the file or its chat_template is
  // absent. A template outside the supported subset, or a malformed file, is a SpecError
  // naming the file, the field and (for the template) the line and column.
  static std::optional<ChatTemplate> load(const std::filesystem::path& tokenizer_config);
  // A template's text with the special tokens it may use; JinjaError on a syntax error.
  ChatTemplate(const std::string& source, JinjaValue special_tokens);

  // The prompt text for `messages` (a list of dicts with at least role and content);
  // `extra` (a dict, may be undefined) adds variables such as tools or enable_thinking.
  // JinjaError for raise_exception and runtime errors.
  std::string render(const JinjaValue& messages, bool add_generation_prompt,
                     const JinjaValue& extra = JinjaValue()) const;
  std::string apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  // The special token's text ("" when the config names none).
  std::string special_token(const std::string& name) const;

 private:
  std::shared_ptr<const JinjaTemplate> template_;
  JinjaValue special_tokens_;  // a dict: bos_token, eos_token, ...
};

}  // namespace tessera
