#pragma once

// The request and answer bodies of the live LLM server's endpoints (docs/llm-serve.md):
// OpenAI-compatible POST /v1/completions and /v1/chat/completions, and KServe v2's
// POST /v2/models/{m}/generate and generate_stream. Parsing checks every field it reads and
// throws LlmRequestError naming it (invalid UTF-8, duplicate keys, wrong types, numbers out
// of range, missing fields); a field the server does not implement is refused by name, and
// the few it accepts without acting on them are listed in docs/llm-serve.md with the reason.
// Answers are built as JSON text; token text that is not valid UTF-8 (byte-level pieces of
// a character, or a random model's bytes) is written with U+FFFD in its place. Pure
// functions; thread-safe.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sampling/sampler.hpp"

namespace tessera {

class ChatTemplate;

enum class LlmApi : uint8_t { kCompletion, kChat, kGenerate };

struct LlmRequestLimits {
  std::size_t max_prompt_bytes = 1u << 20;  // the prompt text (chat: all messages)
  // max_tokens above this is refused; 0: up to the model's context (the server checks
  // prompt + max_tokens against the model's positions).
  uint32_t max_new_tokens = 0;
  uint32_t default_new_tokens = 16;  // completions and generate, when max_tokens is not given
  std::size_t max_messages = 256;
  std::size_t max_prompts = 64;  // a completion's list of prompts
  uint32_t max_choices = 64;     // prompts x n
  std::size_t max_stop = 4;      // stop strings (OpenAI allows 4)
};

struct LlmApiRequest {
  LlmApi api = LlmApi::kCompletion;
  std::string model;                 // as named by the request ("" when not given)
  std::vector<std::string> prompts;  // completions: one or more; chat, generate: one
  // max_tokens as asked; nullopt: the endpoint's default (completions and generate:
  // limits.default_new_tokens; chat: the rest of the model's context).
  std::optional<uint32_t> max_tokens;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  // Stop at the model's end-of-sequence token (the default, as OpenAI's API does);
  // `ignore_eos: true` (vLLM's field; replays and load generators set it) generates
  // max_tokens.
  bool stop_at_eos = true;
  SamplingParams sampling;  // temperature, top_p, top_k, penalties, seed, top_logprobs
  bool logprobs = false;    // report each token's log-probability (and top_logprobs)
  uint32_t n = 1;           // choices per prompt
  std::vector<std::string> stop;
  bool echo = false;  // completions: the prompt before the completion
  // Tokenize the prompt with the tokenizer's special tokens (e.g. Llama's BOS), as vLLM
  // does; false for a chat template's text, which writes them itself.
  bool add_special_tokens = true;
};

// A 4xx answer: `field` is the request part at fault ("" for the body as a whole).
class LlmRequestError : public std::runtime_error {
 public:
  LlmRequestError(int status, std::string field, const std::string& message)
      : std::runtime_error(message), status_(status), field_(std::move(field)) {}
  int status() const { return status_; }
  const std::string& field() const { return field_; }

 private:
  int status_;
  std::string field_;
};

LlmApiRequest parse_completion_request(const std::string& body, const LlmRequestLimits& limits);
// `chat_template`: the checkpoint's (tokenizer_config.json); without one every message is
// written as "<role>: <content>\n", then "assistant: ".
LlmApiRequest parse_chat_request(const std::string& body, const LlmRequestLimits& limits,
                                 const ChatTemplate* chat_template = nullptr);
// `stream`: generate_stream rather than generate.
LlmApiRequest parse_generate_request(const std::string& body, bool stream,
                                     const LlmRequestLimits& limits);

// vLLM's POST /tokenize: `prompt` (special tokens added unless add_special_tokens is
// false), or `messages` through the chat template (add_generation_prompt, default true;
// special tokens not added unless asked: the template writes them).
struct LlmTokenizeRequest {
  std::string model;
  std::string text;
  bool add_special_tokens = true;
  bool return_token_strs = false;
};
LlmTokenizeRequest parse_tokenize_request(const std::string& body, const LlmRequestLimits& limits,
                                          const ChatTemplate* chat_template);
// vLLM's POST /detokenize: `tokens`, each an id in [0, vocab).
struct LlmDetokenizeRequest {
  std::string model;
  std::vector<int64_t> tokens;
};
LlmDetokenizeRequest parse_detokenize_request(const std::string& body, int64_t vocab);

// One generated token as an answer reports it.
struct LlmTokenLogprob {
  std::string token;  // its text
  double logprob = 0.0;
  std::vector<std::pair<std::string, double>> top;  // most likely first
};

// One choice of an answer.
struct LlmChoice {
  uint32_t index = 0;
  std::string text;
  bool stopped = false;  // ended at EOS or a stop string: finish_reason "stop" (else "length")
  std::vector<LlmTokenLogprob> logprobs;  // with `logprobs` asked
};

struct LlmUsage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
};

// Whole answers (`logprobs`: the request asked for them).
std::string completion_answer(LlmApi api, const std::string& id, int64_t created,
                              const std::string& model, const std::vector<LlmChoice>& choices,
                              bool logprobs, const LlmUsage& usage);
std::string generate_answer(const std::string& model, const std::string& text);
// One server-sent event (the "data: ...\n\n" text): a streamed piece of choice `index`'s
// text (with its token's log-probability when `lp` is given); a choice's final event
// (finish_reason, with the text still held back; chat: in its delta); the usage chunk
// (stream_options.include_usage: no choices); the role event that opens each chat choice.
std::string stream_event(LlmApi api, const std::string& id, int64_t created,
                         const std::string& model, uint32_t index, const std::string& piece,
                         const LlmTokenLogprob* lp = nullptr);
// `rest`: the choice's text not sent yet (an incomplete character at the end, held-back text
// of a possible stop string).
std::string stream_final_event(LlmApi api, const std::string& id, int64_t created,
                               const std::string& model, uint32_t index, bool stopped,
                               const std::string& rest = "");
std::string stream_usage_event(LlmApi api, const std::string& id, int64_t created,
                               const std::string& model, const LlmUsage& usage);
std::string stream_role_event(const std::string& id, int64_t created, const std::string& model,
                              uint32_t index);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
// Error bodies: OpenAI's {"error": {"message", "type", "param", "code"}} for /v1, KServe's
// {"error": "..."} for /v2.
std::string openai_error(const std::string& message, const std::string& type,
                         const std::string& param);
std::string kserve_error(const std::string& message);
std::string sse_error_event(LlmApi api, const std::string& message);

}  // namespace tessera
