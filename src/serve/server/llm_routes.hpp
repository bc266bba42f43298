#pragma once

// The LLM server's routes over HTTP (docs/llm-serve.md#endpoints): OpenAI completions and
// chat completions (whole or streamed as server-sent events), /v1/models, the KServe
// generate extension (generate, generate_stream), model metadata, health and /metrics.
// Each generation is checked (body, prompt tokens, positions), admitted (the front end's
// Admission: 429 over --max-inflight, 503 while draining) and submitted to the LlmEndpoint,
// whose end answers it exactly once. A path served with another method is 405 with Allow.
//
// The routes hold a copy of LlmRoutes; what it references must outlive the router.

#include <cstdint>
#include <memory>
#include <string>

#include "serve/http/admission.hpp"
#include "serve/http/router.hpp"
#include "serve/metrics/llm_metrics.hpp"
#include "serve/openai/llm_protocol.hpp"
#include "serve/runtime/llm_endpoint.hpp"

namespace tessera {

class ChatTemplate;
class Tokenizer;

struct LlmRoutes {
  std::string model;  // the served model's name
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat_template;  // null: "role: content" lines
  LlmRequestLimits limits;                            // prompt bytes, max_tokens bounds
  uint32_t max_prompt_tokens;                         // prompt tokens at most
  uint32_t max_positions;     // prompt + max_tokens at most (the model's positions)
  int64_t eos_token;          // what a request stops at unless `ignore_eos: true`; < 0: none
  const int64_t& started_at;  // Unix seconds of the server's start: /v1/models' "created"
  LlmEndpoint& endpoint;
  LlmServeMetrics& metrics;
  Admission& admission;
};

void add_llm_routes(HttpRouter& router, LlmRoutes routes);

// The metrics' gauges sampled from the endpoint's instances.
LlmServeMetrics::Gauges llm_gauges(const LlmEndpointStats& stats);

}  // namespace tessera
