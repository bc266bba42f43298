#include "llm/llm_cost_model.hpp"

#include <utility>

namespace tessera {

LlmAnalyticCostModel::LlmAnalyticCostModel(LlmModel model, LlmGpu gpu)
    : model_(std::move(model)), gpu_(std::move(gpu)) {
  per_prefill_token_ = 2.0 * model_.params / (gpu_.flops * gpu_.mfu);
  const double bandwidth = gpu_.bandwidth * gpu_.mbu;
  weights_read_ = model_.weight_bytes_total() / bandwidth;
  per_context_token_ = model_.kv_bytes_per_token() / bandwidth;
}

Time LlmAnalyticCostModel::step_time(const Worker& /*worker*/, const StepContents& step) const {
  return gpu_.step_overhead + per_prefill_token_ * static_cast<double>(step.tokens_in) +
         weights_read_ + per_context_token_ * static_cast<double>(step.context_tokens);
}

}  // namespace tessera
