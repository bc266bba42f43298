#pragma once

// LlmAnalyticCostModel: tessera's analytic time of one LLM step (docs/llm.md#cost-model),
// from the model's dimensions and the GPU's figures:
//
//   t = step_overhead + 2 * params * prefill_tokens / (flops * mfu)
//                     + (weight bytes + kv_bytes_per_token * context_tokens) / (bandwidth * mbu)
//
// Prefill is compute-bound and linear in the prompt tokens of the step; every step reads
// the weights once and the KV cache of every request in it (decode is memory-bound).
// Attention's quadratic FLOPs and the KV writes are left out. StepContents::tokens_in are
// the prefill tokens, context_tokens the KV read; batch and tokens_out do not change t.
//
// Immutable after construction; may be shared by engines and threads.

#include "engine/cost_model.hpp"
#include "llm/llm_model.hpp"

namespace tessera {

class LlmAnalyticCostModel final : public CostModel {
 public:
  LlmAnalyticCostModel(LlmModel model, LlmGpu gpu);
  Time step_time(const Worker& worker, const StepContents& step) const override;

  const LlmModel& model() const { return model_; }
  const LlmGpu& gpu() const { return gpu_; }

 private:
  LlmModel model_;
  LlmGpu gpu_;
  double per_prefill_token_;  // s
  double weights_read_;       // s
  double per_context_token_;  // s
};

}  // namespace tessera
