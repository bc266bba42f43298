#pragma once

// LlmParallelism and LlmParallelCostModel: an LLM instance spread over TP × PP GPUs
// (docs/llm.md#tp--pp-instances), e.g. a configuration of iServe's configuration map.
//
// Time of one step (the instance's steady-state iteration): the step's requests go through
// the pipeline as m = min(PP, batch) micro-batches of equal shares of its prompt and context
// tokens. Each of the PP stages holds layers/PP layers and runs on TP GPUs, each reading
// its 1/TP share of the weights and KV heads (at least one KV head per rank). A stage
// spends s = t_rank(micro-batch) / PP + (layers / PP) × reduces_per_layer × all-reduce(TP)
// + send/recv on a micro-batch, where t_rank is LlmAnalyticCostModel's time of one TP rank
// holding every layer. In steady state each micro-batch makes a trip through all stages per
// iteration while the stages work on the others: the iteration takes PP × s — every request
// in it advances by one step, so that is also each request's time per output token. With
// PP micro-batches the weights-read and overhead terms are paid per micro-batch of
// 1/PP of the requests: at PP = 2 an instance runs twice the batch at the same iteration
// time as PP = 1 (twice the throughput capacity). A lone request (m = 1) pays the whole
// pipeline's latency, t_rank + all communication, which is iServe's TTFT and TPOT of the
// configuration (src/iserve/analytic_model.hpp). The (PP − 1) activation transfers are
// counted once per iteration, as in iServe's model (the last stage's token back to the
// first is left out). Collectives: ring all-reduce, alpha + 2 (TP − 1) / TP × bytes /
// bus bandwidth, of hidden × 2 bytes per token; send/recv alpha + bytes / bandwidth.
//
// KV cache: the memory left on the TP × PP GPUs after the weights and a per-GPU reserve,
// in blocks of the whole model's KV per token (KV heads replicated when TP exceeds them).
//
// Plain values and an immutable cost model; safe to share between threads.

#include <cstdint>

#include "engine/cost_model.hpp"
#include "llm/llm_cost_model.hpp"
#include "llm/llm_model.hpp"

namespace tessera {

struct LlmLink {
  double latency = 0.0;        // s per collective or transfer
  double bus_bandwidth = 0.0;  // bytes/s; 0 = free (no communication cost)
};

struct LlmParallelism {
  uint32_t tp = 1;
  uint32_t pp = 1;
  uint32_t hidden = 4096;             // activation width of the collectives and transfers
  uint32_t reduces_per_layer = 2;     // all-reduces per layer (1 with a parallel residual)
  double reserved_bytes_per_gpu = 0;  // runtime and activation memory on each GPU
  LlmLink tp_link;                    // the TP group's all-reduce
  LlmLink pp_link;                    // between pipeline stages
  uint32_t gpus() const { return tp * pp; }
};

// The model as one TP rank sees it: 1/TP of the parameters, max(1, kv_heads / TP) KV heads.
LlmModel llm_rank_model(const LlmModel& model, uint32_t tp);

// The whole instance's KV bytes per token (KV heads replicated when TP exceeds them).
double llm_kv_bytes_per_token(const LlmModel& model, uint32_t tp);

// The KV blocks of `block_tokens` tokens the TP × PP GPUs hold: memory × utilization per GPU,
// less the reserve per GPU, less the weights; 0 when nothing is left.
uint32_t kv_blocks_for(const LlmModel& model, const LlmGpu& gpu, const LlmParallelism& par,
                       uint32_t block_tokens);

class LlmParallelCostModel final : public CostModel {
 public:
  LlmParallelCostModel(const LlmModel& model, const LlmGpu& gpu, const LlmParallelism& par);
  Time step_time(const Worker& worker, const StepContents& step) const override;

  // The communication of one trip of `tokens` activations through the pipeline: every
  // layer's all-reduces plus the (PP − 1) transfers.
  Time communication(double tokens) const;
  const LlmParallelism& parallelism() const { return par_; }

 private:
  LlmModel model_;
  LlmParallelism par_;
  LlmAnalyticCostModel rank_;
};

}  // namespace tessera
