#pragma once

// LlmSchedulerConfig: how an LLM instance schedules its steps (docs/llm.md#scheduling):
// the policy, its limits, the instance's KV blocks and tessera's SLO-aware admission. A
// plain value, read from the run spec's `llm:` section and copied into every instance's
// LlmInstanceScheduler.

#include <cstdint>
#include <string_view>

#include "core/time.hpp"

namespace tessera {

enum class LlmPolicy : uint8_t {
  kFcfs,        // iServe: one request at a time, first come first served
  kStatic,      // a batch is admitted when the instance is idle and runs until all of it ends
  kContinuous,  // iteration-level batching: whole-prompt prefill steps first, then decode
  kChunked,     // Sarathi-style: every iteration decodes all and fills its budget with chunks
};

inline constexpr std::string_view llm_policy_name(LlmPolicy p) {
  switch (p) {
    case LlmPolicy::kFcfs:
      return "fcfs";
    case LlmPolicy::kStatic:
      return "static";
    case LlmPolicy::kContinuous:
      return "continuous";
    case LlmPolicy::kChunked:
      return "chunked";
  }
  return "?";
}

struct LlmSchedulerConfig {
  LlmPolicy policy = LlmPolicy::kContinuous;
  uint32_t max_seqs = 256;       // requests admitted at once per instance (static: batch size)
  uint32_t token_budget = 2048;  // tokens per iteration (continuous: prompt tokens per prefill
                                 // step; chunked: decode tokens plus prefill chunks)
  uint32_t kv_blocks = 0;        // the instance's KV cache
  uint32_t block_tokens = 16;
  // Automatic prefix caching (docs/llm.md#prefix-caching): full prompt blocks stay cached
  // after their request and a request whose prompt starts with them skips their prefill.
  bool prefix_caching = true;
  // tessera's SLO-aware admission (continuous and chunked): drop what is predicted to miss
  // its TTFT SLO or its deadline, and hold back admissions that would push the decode
  // iteration past the TPOT SLO.
  bool slo_admission = false;
  // The output length the predictor uses: the request's own (known from the trace) or,
  // when false, the mean output of the requests this instance finished so far.
  bool output_known = true;
  uint32_t default_output_tokens = 128;  // the mean before any request finished
  // The app's SLOs the admission predicts against (App::ttft_slo, tpot_slo; 0 = none).
  Time ttft_slo = 0.0;
  Time tpot_slo = 0.0;
};

}  // namespace tessera
