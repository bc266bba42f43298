#pragma once

// The request and answer bodies of the live LLM server's endpoints (docs/llm-serve.md):
// OpenAI-compatible POST /v1/completions and /v1/chat/completions, and KServe v2's
// POST /v2/models/{m}/generate and generate_stream. Parsing checks every field it reads and
// throws LlmRequestError naming it (invalid UTF-8, wrong types, out-of-range numbers,
// missing fields). Answers are built as JSON text; token text that is not valid UTF-8
// (byte-level pieces of a character, or a random model's bytes) is written with U+FFFD in
// its place. Pure functions; thread-safe.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tessera {

enum class LlmApi : uint8_t { kCompletion, kChat, kGenerate };

struct LlmRequestLimits {
  std::size_t max_prompt_bytes = 1u << 20;  // the prompt text (chat: all messages)
  uint32_t max_new_tokens = 1024;           // max_tokens above this is refused
  uint32_t default_new_tokens = 16;         // when max_tokens is not given
  std::size_t max_messages = 256;
};

struct LlmApiRequest {
  LlmApi api = LlmApi::kCompletion;
  std::string model;   // as named by the request ("" when not given)
  std::string prompt;  // the text to complete (chat: the messages in the chat template)
  uint32_t max_tokens = 16;
  bool stream = false;
  // EOS stop: `ignore_eos: false` (vLLM's field; OpenAI bodies and KServe `parameters`)
  // asks to end at the model's end-of-sequence token. tessera's default is to ignore it,
  // so that a replayed trace generates its output lengths.
  bool stop_at_eos = false;
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
// The chat template: every message as "<role>: <content>\n", then "assistant: ".
LlmApiRequest parse_chat_request(const std::string& body, const LlmRequestLimits& limits);
// `stream`: generate_stream rather than generate.
LlmApiRequest parse_generate_request(const std::string& body, bool stream,
                                     const LlmRequestLimits& limits);

struct LlmUsage {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  bool stopped = false;  // ended at EOS: finish_reason "stop" (else "length")
};

// Whole answers.
std::string completion_answer(LlmApi api, const std::string& id, int64_t created,
                              const std::string& model, const std::string& text,
                              const LlmUsage& usage);
std::string generate_answer(const std::string& model, const std::string& text);
// One server-sent event (the "data: ...\n\n" text): a streamed piece of text; the final
// event (`finish` true: finish_reason and usage; chat: an empty delta); the role event
// that opens a chat stream.
std::string stream_event(LlmApi api, const std::string& id, int64_t created,
                         const std::string& model, const std::string& piece);
std::string stream_final_event(LlmApi api, const std::string& id, int64_t created,
                               const std::string& model, const LlmUsage& usage);
std::string stream_role_event(const std::string& id, int64_t created, const std::string& model);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";
// Error bodies: OpenAI's {"error": {"message", "type", "param", "code"}} for /v1, KServe's
// {"error": "..."} for /v2.
std::string openai_error(const std::string& message, const std::string& type,
                         const std::string& param);
std::string kserve_error(const std::string& message);
std::string sse_error_event(LlmApi api, const std::string& message);

}  // namespace tessera
