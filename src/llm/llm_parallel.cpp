#include "llm/llm_parallel.hpp"

#include <algorithm>

namespace tessera {
namespace {

double kv_heads_per_rank(const LlmModel& model, uint32_t tp) {
  return std::max(1.0, static_cast<double>(model.kv_heads) / std::max<uint32_t>(1, tp));
}

}  // namespace

LlmModel llm_rank_model(const LlmModel& model, uint32_t tp) {
  const uint32_t t = std::max<uint32_t>(1, tp);
  LlmModel rank = model;
  rank.params = model.params / t;
  rank.kv_heads = static_cast<uint32_t>(kv_heads_per_rank(model, t));
  return rank;
}

double llm_kv_bytes_per_token(const LlmModel& model, uint32_t tp) {
  const uint32_t t = std::max<uint32_t>(1, tp);
  return 2.0 * model.layers * kv_heads_per_rank(model, t) * t * model.head_dim * model.kv_bytes;
}

uint32_t kv_blocks_for(const LlmModel& model, const LlmGpu& gpu, const LlmParallelism& par,
                       uint32_t block_tokens) {
  const double gpus = static_cast<double>(par.gpus());
  const double free =
      gpus * (gpu.memory_bytes * gpu.memory_utilization - par.reserved_bytes_per_gpu) -
      model.weight_bytes_total();
  if (free <= 0 || block_tokens == 0 || gpus <= 0) return 0;
  const double blocks = free / (llm_kv_bytes_per_token(model, par.tp) * block_tokens);
  return blocks >= 4e9 ? 4000000000u : static_cast<uint32_t>(blocks);
}

LlmParallelCostModel::LlmParallelCostModel(const LlmModel& model, const LlmGpu& gpu,
                                           const LlmParallelism& par)
    : model_(model), par_(par), rank_(llm_rank_model(model, par.tp), gpu) {
  par_.tp = std::max<uint32_t>(1, par_.tp);
  par_.pp = std::max<uint32_t>(1, par_.pp);
}

Time LlmParallelCostModel::communication(double tokens) const {
  const double bytes = tokens * par_.hidden * 2.0;
  double t = 0.0;
  if (par_.tp > 1 && par_.tp_link.bus_bandwidth > 0) {
    const double n = par_.tp;
    const double all_reduce =
        par_.tp_link.latency + 2.0 * (n - 1) / n * bytes / par_.tp_link.bus_bandwidth;
    t += static_cast<double>(model_.layers) * par_.reduces_per_layer * all_reduce;
  }
  if (par_.pp > 1 && par_.pp_link.bus_bandwidth > 0) {
    t += (par_.pp - 1) * (par_.pp_link.latency + bytes / par_.pp_link.bus_bandwidth);
  }
  return t;
}

Time LlmParallelCostModel::step_time(const Worker& worker, const StepContents& step) const {
  const uint64_t m =
      std::clamp<uint64_t>(static_cast<uint64_t>(std::max(step.batch, 1)), 1, par_.pp);
  const double share = 1.0 / static_cast<double>(m);
  StepContents micro = step;
  micro.batch = std::max(1, static_cast<int>(step.batch / static_cast<int>(m)));
  micro.tokens_in = static_cast<uint64_t>(static_cast<double>(step.tokens_in) * share + 0.5);
  micro.tokens_out = static_cast<uint64_t>(static_cast<double>(step.tokens_out) * share + 0.5);
  micro.context_tokens =
      static_cast<uint64_t>(static_cast<double>(step.context_tokens) * share + 0.5);
  // Activations of a micro-batch: its prompt tokens and one per decoding request.
  const double tokens =
      std::max(1.0, static_cast<double>(step.tokens_in + step.tokens_out) * share);
  return rank_.step_time(worker, micro) + communication(tokens);
}

}  // namespace tessera
