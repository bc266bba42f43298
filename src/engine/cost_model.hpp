#pragma once

// CostModel: how long one step of an instance takes, given the instance (its variants,
// hardware segment and profiled table) and the step's contents (batch size, the tokens of
// its requests, the bytes it moves). The simulator asks it for the duration of every step
// it runs; the live server measures real steps and uses it only for estimates.
//
// Implementations are immutable after construction and may be shared by several engines
// and threads.

#include <cstdint>
#include <memory>
#include <span>

#include "core/time.hpp"
#include "engine/worker.hpp"

namespace tessera {

// One request's part in an LLM step, for cost models that time requests one by one
// (LlmMeasuredCostModel): it prefills `prefill` tokens from position `prefill_from` and/or
// decodes one token over a KV cache of `context` tokens (itself included).
struct StepPart {
  uint32_t prefill_from = 0;
  uint32_t prefill = 0;
  bool decode = false;
  uint64_t context = 0;
};

// What one step runs.
struct StepContents {
  int variant_slot = 0;     // index into Worker::variants
  int batch = 1;            // items in the step
  uint64_t tokens_in = 0;   // prompt tokens over the step's items
  uint64_t tokens_out = 0;  // output tokens over the step's items
  // LLM steps (LlmInstanceScheduler): tokens_in is the prompt tokens the step prefills and
  // tokens_out the tokens it decodes (one per decoding request); context_tokens is the KV
  // cache the step reads (the context of every request in it). 0 for other steps.
  uint64_t context_tokens = 0;
  // LLM steps: the requests' parts, when the scheduler plans a real step (empty for its
  // predictions, which give the sums above only). Valid during the step_time call only.
  std::span<const StepPart> parts;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual Time step_time(const Worker& worker, const StepContents& step) const = 0;
};

// The profiled latency table of (variant, segment, batch size): Worker::profiled_latency.
// Tokens are ignored. The default cost model.
class ProfileCostModel final : public CostModel {
 public:
  Time step_time(const Worker& worker, const StepContents& step) const override {
    return worker.profiled_latency(step.variant_slot, step.batch);
  }
};

// The profiled batch latency plus a linear cost per token: prefill-like work per prompt
// token and decode-like work per output token. A simple, documented model for requests
// that carry sizes (docs/architecture.md#cost-models); LLM instances use richer ones.
class TokenLinearCostModel final : public CostModel {
 public:
  TokenLinearCostModel(Time per_input_token, Time per_output_token)
      : per_input_token_(per_input_token), per_output_token_(per_output_token) {}
  Time step_time(const Worker& worker, const StepContents& step) const override {
    return worker.profiled_latency(step.variant_slot, step.batch) +
           per_input_token_ * static_cast<double>(step.tokens_in) +
           per_output_token_ * static_cast<double>(step.tokens_out);
  }

 private:
  Time per_input_token_;
  Time per_output_token_;
};

}  // namespace tessera
