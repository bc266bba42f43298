#pragma once

// One OpenAI / KServe generation answer of the LLM server (docs/llm-serve.md#endpoints):
// its choices (a prompt x n, each its own engine request), the text each has so far (whole
// UTF-8 characters, cut at a stop string), their log-probabilities, and the answer: whole
// when every choice has ended, or streamed as server-sent events as the tokens come (a
// chat choice opens with its role event, each choice ends with its finish_reason, then the
// usage chunk when stream_options.include_usage asks, then [DONE]). A choice that fails
// fails the answer (once), and the other choices are cancelled.
//
// Threads: the choices' tokens arrive on their instances' threads, their ends on the
// endpoint's loop; the answer's mutex serialises them. Holds its request in flight (the
// admission ticket) until it is answered.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serve/http/admission.hpp"
#include "serve/http/http_frontend.hpp"
#include "serve/metrics/llm_metrics.hpp"
#include "serve/openai/llm_protocol.hpp"
#include "serve/openai/stop_strings.hpp"
#include "serve/runtime/llm_request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

class LlmCall : public std::enable_shared_from_this<LlmCall> {
 public:
  struct Options {
    LlmApi api = LlmApi::kCompletion;
    bool stream = false;
    bool include_usage = false;
    bool logprobs = false;
    std::string id;
    int64_t created = 0;
    std::string model;
    std::vector<std::string> stop;
  };
  LlmCall(Responder respond, std::shared_ptr<const Tokenizer> tokenizer, LlmServeMetrics& metrics,
          Admission::Ticket ticket, Options options);

  // A choice of `prompt_tokens` tokens; `echo`: its text starts with this prompt text.
  // Returns the callbacks of its engine request. All choices are added before any is
  // submitted.
  LlmCallbacks add_choice(uint32_t prompt_tokens, std::string echo, bool count_prompt);

 private:
  struct Choice {
    uint32_t index = 0;
    uint32_t prompt_tokens = 0;
    bool count_prompt = true;  // its prompt counts in usage (once per prompt, not per n)
    std::string echo;
    std::unique_ptr<TextStream> pieces;
    StopStrings stops;
    LlmChoice answer;
    bool started = false;  // streamed: its first event is out
    bool ended = false;
    explicit Choice(std::vector<std::string> stop) : stops(std::move(stop)) {}
  };

  LlmTokenVerdict on_token(Choice& c, const SampledToken& token);
  void on_end(Choice& c, const LlmRequestEnd& end);
  bool open_stream();
  void fail(const LlmRequestEnd& end);
  void answer();

  Responder respond_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  LlmServeMetrics& metrics_;
  Options o_;
  std::mutex mutex_;
  Admission::Ticket ticket_;
  std::vector<std::unique_ptr<Choice>> choices_;
  std::size_t ended_ = 0;
  LlmUsage usage_;
  std::unique_ptr<ResponseStream> sse_;
  bool done_ = false;  // answered (or failed): later tokens cancel their requests
};

}  // namespace tessera
