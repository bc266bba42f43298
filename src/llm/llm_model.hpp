#pragma once

// LlmModel and LlmGpu: the dimensions of a decoder-only LLM and the figures of the GPU an
// instance runs on, from which the KV-cache size per token, the number of KV blocks an
// instance holds and the analytic step cost (llm_cost_model.hpp) follow
// (docs/llm.md#model-and-gpu). Plain values, filled in by the run spec's `llm:` section;
// immutable once built and safe to share between threads.

#include <cstdint>
#include <string>

namespace tessera {

struct LlmModel {
  std::string name;
  uint32_t layers = 32;
  uint32_t kv_heads = 32;  // key/value heads (fewer than query heads with GQA)
  uint32_t head_dim = 128;
  double params = 6.74e9;     // parameters
  double weight_bytes = 2.0;  // bytes per parameter: 2 (fp16), 1 (int8), 0.5 (int4)
  double kv_bytes = 2.0;      // bytes per KV element: 2 (fp16) or 1 (int8 KV cache)
  // The context: positions the model can attend to (config.json's max_position_embeddings;
  // 4,096 for Llama-2). A request whose prompt plus output tokens exceed it is refused, as
  // the live server refuses it (docs/llm.md#context-length). 0: not limited.
  uint32_t max_positions = 0;

  // Keys and values of one token over every layer.
  double kv_bytes_per_token() const { return 2.0 * layers * kv_heads * head_dim * kv_bytes; }
  double weight_bytes_total() const { return params * weight_bytes; }
};

struct LlmGpu {
  std::string name;
  double memory_bytes = 80e9;
  double memory_utilization = 0.9;  // share of memory for weights and KV cache (vLLM's)
  double bandwidth = 2.0e12;        // bytes/s of HBM
  double flops = 312e12;            // dense fp16 FLOP/s
  double mfu = 0.5;                 // achieved share of `flops` in prefill
  double mbu = 0.8;                 // achieved share of `bandwidth` in decode
  double step_overhead = 0.002;     // s: launch and scheduling cost of every step
};

// The KV blocks of `block_tokens` tokens one instance holds: the memory left for the
// cache after the weights, divided into blocks; 0 when the weights alone do not fit.
inline uint32_t kv_blocks_for(const LlmModel& model, const LlmGpu& gpu, uint32_t block_tokens) {
  const double free = gpu.memory_bytes * gpu.memory_utilization - model.weight_bytes_total();
  if (free <= 0 || block_tokens == 0) return 0;
  const double blocks = free / (model.kv_bytes_per_token() * block_tokens);
  return blocks >= 4e9 ? 4000000000u : static_cast<uint32_t>(blocks);
}

}  // namespace tessera
