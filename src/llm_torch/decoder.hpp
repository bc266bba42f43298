#pragma once

// A decoder-only transformer on libtorch that runs the checkpoints of src/llm (Llama /
// Mistral, GPT-J, Falcon; random-weight or real, in safetensors with their config.json):
// token embedding, RMSNorm or LayerNorm, rotary positions, multi-head, grouped-query or
// multi-query attention over a KV cache, gated or plain MLP, sequential or parallel
// residual, LM head. Weights can be held as loaded or quantised weight-only to INT8 or
// packed INT4 with per-output-channel scales; the KV cache in FP32 or INT8 with a scale
// per token and head. Computation is FP32 on the CPU.
//
// The header holds no libtorch type, so callers need not include it. A Decoder is
// immutable after load and may be shared across threads; a Sequence (one request's KV
// cache) belongs to one caller at a time.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "llm_arch/deployment_config.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera {

struct DecoderOptions {
  WeightQuant weights = WeightQuant::kFp16;  // kFp16: as loaded; kInt8, kInt4: quantised
  KvQuant kv_cache = KvQuant::kFp16;         // kFp16: FP32 cache; kInt8: INT8 with scales
};

class Decoder {
 public:
  // One sequence's state: its KV cache and how many tokens it holds.
  class Sequence {
   public:
    virtual ~Sequence() = default;
    virtual int64_t length() const = 0;
    virtual uint64_t kv_bytes() const = 0;  // bytes the cache holds now
  };

  // Loads DIR/config.json and DIR's safetensors (one file or shards). A missing tensor or a
  // shape that disagrees with the config is a SpecError naming the file and the tensor.
  static std::unique_ptr<Decoder> load(const std::filesystem::path& dir,
                                       const DecoderOptions& options = {});
  virtual ~Decoder() = default;

  virtual const LlmArchitecture& architecture() const = 0;
  virtual uint64_t weight_bytes() const = 0;  // bytes the weights hold in memory

  // A new, empty sequence that can hold up to `max_tokens` tokens.
  virtual std::unique_ptr<Sequence> start(int64_t max_tokens) const = 0;
  // Appends `tokens` to the sequence (a prefill when several, a decode step when one) and
  // returns the logits at its last position (vocab floats). Token ids must be in
  // [0, vocab) and the sequence must have room; std::invalid_argument otherwise.
  virtual std::vector<float> step(Sequence& sequence, const std::vector<int64_t>& tokens) const = 0;
  // Greedy generation: prefill `prompt`, then `new_tokens` decode steps.
  std::vector<int64_t> generate(const std::vector<int64_t>& prompt, int64_t new_tokens) const;
};

}  // namespace tessera
