#pragma once

// EngineLoad: an LLM engine's scheduler and KV-cache state as it publishes it on its
// Prometheus /metrics under vLLM's names (docs.vllm.ai, "Production Metrics"), which
// tessera's own LLM server also exports: vllm:num_requests_running,
// vllm:num_requests_waiting and vllm:kv_cache_usage_perc (or the older
// vllm:gpu_cache_usage_perc). The LLM gateway's `kv_load` routing reads it
// (docs/llm-gateway.md).
//
// parse_engine_load reads Prometheus's text exposition format: one sample per line, `NAME`
// or `NAME{LABELS}`, a value, an optional timestamp; `#` lines and every other metric are
// skipped. Running and waiting are summed over label sets (one per served model), the KV
// usage is their largest. Hostile text is never trusted: a line of the three metrics that
// does not parse, a value that is not a finite number >= 0, or a text without
// vllm:num_requests_waiting is an error (nullopt, `why` says which line and what). Pure
// functions; thread-safe.

#include <optional>
#include <string>
#include <string_view>

namespace tessera {

struct EngineLoad {
  double running = 0;   // requests in the running batch
  double waiting = 0;   // requests waiting to be scheduled
  double kv_usage = 0;  // KV-cache blocks held over blocks, 0..1 (0 when not published)
};

std::optional<EngineLoad> parse_engine_load(std::string_view text, std::string& why);

}  // namespace tessera
