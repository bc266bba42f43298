#pragma once

// What the LLM gateway routes on, read from one OpenAI request (docs/llm-gateway.md#routing):
// the prompt's estimated tokens and its leading blocks' hashes (from the text: the gateway
// has no tokenizer of the backends' model), a session (x-tessera-session), the priority and
// the TTFT / TPOT SLOs. Priority, SLOs and session come from x-tessera-* headers or from the
// body's "tessera" object (a header wins over the body), else the defaults given (the run
// spec's); anything else under either is refused. The "tessera" object is taken out of the
// body, which goes upstream without it. Pure functions; thread-safe.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/llm_routing.hpp"

namespace tessera {

struct LlmRequestDefaults {
  LlmPriority priority = LlmPriority::kSheddable;
  Time ttft_slo = 0, tpot_slo = 0;  // seconds; 0: none
  std::size_t block_bytes = 64;     // a KV block's tokens * kLlmBytesPerToken
  std::size_t max_blocks = 4;       // leading blocks hashed
};

struct LlmRequestRouting {
  LlmRouteRequest request;  // its prefix_hashes span is set by route()
  std::vector<uint64_t> prefix_hashes;
  // The request with its prefix hashes (valid while this object lives and is not changed).
  LlmRouteRequest route() const {
    LlmRouteRequest r = request;
    r.prefix_hashes = prefix_hashes;
    return r;
  }
};

// A request's fault: the HTTP status (400), the message and the field ("x-tessera-priority",
// "tessera.ttft_slo_ms").
struct LlmRoutingFieldError {
  std::string message;
  std::string field;
};

// Reads `body` (a JSON object; its "tessera" member is erased) and the request's x-tessera-*
// headers (lower-cased names). `chat`: /v1/chat/completions (messages), else /v1/completions
// (prompt). Returns the error instead when a value is hostile.
std::optional<LlmRoutingFieldError> read_llm_routing(
    nlohmann::json& body, const std::vector<std::pair<std::string, std::string>>& headers,
    bool chat, const LlmRequestDefaults& defaults, LlmRequestRouting& out);

}  // namespace tessera
