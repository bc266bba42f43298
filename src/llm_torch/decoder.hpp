#pragma once

// A decoder-only transformer on libtorch that runs the checkpoints of src/llm (Llama /
// Mistral, GPT-J, Falcon; random-weight or real, in safetensors with their config.json):
// token embedding, RMSNorm or LayerNorm, rotary positions, multi-head, grouped-query or
// multi-query attention over a KV cache, gated or plain MLP, sequential or parallel
// residual, LM head; the rotary settings, sliding window and norm epsilon of the config
// (llm_arch/llm_architecture.hpp). Weights are held in the checkpoint's dtype (BF16, FP16
// or FP32; FP64 becomes FP32) or quantised weight-only to INT8 or packed INT4 with
// per-output-channel scales; the KV cache in FP32 or INT8 with a scale per token and head.
// Computation is FP32 (BF16/FP16 and quantised weights are expanded tile by tile at each
// matmul), on the CPU or on one CUDA device
// (DecoderOptions::device; every shard and stage on that device; the CUDA path is
// untested, docs/iserve.md#devices); logits come back to the host.
//
// Tensor parallelism really splits the work (Megatron-style): each of `tp` shards holds a
// column slice of the query/key/value and gate/up projections (whole attention heads, and
// the KV heads those heads use) and the matching row slice of the output and down
// projections; each shard runs on its own thread, and the shards' partial outputs are
// summed by an all-reduce after attention and after the MLP (once per layer with a
// parallel residual). Pipeline parallelism splits the layers over `pp` stages (evenly, or
// as `stage_layers` says, e.g. 10/9/7/6), each stage a thread that receives the
// activations from the previous stage through a hand-off queue (copied, as a transfer
// between devices would). The embedding is held by stage 0's first shard, the final norm
// and LM head by the last stage's first shard. With tp > 1 or pp > 1 libtorch's intra-op
// threads are set to 1 (process-wide) so each shard's matmuls run on its own thread.
// Under the memory meter (llm_torch/memory_meter.hpp) rank r's allocations are charged to
// account r, so each shard's memory is counted like its own GPU's.
//
// A step is one forward pass over the new tokens of one or more sequences (step_batch):
// prefill chunks and decode tokens together, packed one after the other, each sequence
// with its own KV cache and positions. The projections, norms, MLP and head run once over
// all the tokens; attention runs per sequence against its own cache.
//
// The header holds no libtorch type, so callers need not include it. A Decoder is
// immutable after load and may be shared across threads (steps are serialised); a
// Sequence (one request's KV cache) belongs to one caller at a time.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "llm_arch/deployment_config.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera {

struct DecoderOptions {
  WeightQuant weights = WeightQuant::kFp16;  // kFp16: as the checkpoint holds them (BF16,
                                             // FP16 or FP32); kInt8, kInt4: quantised
  KvQuant kv_cache = KvQuant::kFp16;         // kFp16: FP32 cache; kInt8: INT8 with scales
  int tp = 1;  // tensor-parallel shards: must divide the heads, and divide or be a
               // multiple of the KV heads (parallelism_problem)
  int pp = 1;  // pipeline stages
  // Layers per stage (pp entries summing to the layers; a stage may hold none, e.g. the
  // last stage of a 1-layer fingerprint holding only the head). Empty: as even as
  // possible, the first stages taking the extra layers.
  std::vector<int64_t> stage_layers;
  // Where the weights, caches and computation live (docs/serve.md#serving-on-gpus forms).
  DeviceSpec device{};  // (initialised, so positional {w, kv, tp, pp, {}} needs no 6th field)
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
  // shape that disagrees with the config is a SpecError naming the file and the tensor; a
  // TP degree the model cannot split, or a bad stage split, is std::invalid_argument.
  // A device this build or machine cannot use is the std::runtime_error of check_device.
  static std::unique_ptr<Decoder> load(const std::filesystem::path& dir,
                                       const DecoderOptions& options = {});
  // The CUDA ordinal `device` names (-1: the CPU), or a std::runtime_error saying why it
  // cannot be used ("this tessera was built against a CPU-only libtorch", "no CUDA device
  // visible", ...; core/device.hpp's resolve_device).
  static int check_device(const DeviceSpec& device);
  virtual ~Decoder() = default;

  virtual const LlmArchitecture& architecture() const = 0;
  virtual uint64_t weight_bytes() const = 0;  // bytes the weights hold in memory
  // How the layers' weight matrices are held: "f32", "bf16", "f16", "int8" or "int4".
  virtual std::string weight_dtype() const = 0;
  // weight_bytes() over the architecture's parameters.
  double bytes_per_parameter() const;
  // The weight bytes of each shard, stage by stage: [stage * tp + rank].
  virtual std::vector<uint64_t> shard_weight_bytes() const = 0;
  // The layers each pipeline stage holds.
  virtual std::vector<int64_t> stage_layers() const = 0;

  // A new, empty sequence that can hold up to `max_tokens` tokens (at most the
  // architecture's context_length()).
  virtual std::unique_ptr<Sequence> start(int64_t max_tokens) const = 0;

  // A new sequence holding a copy of `from`'s cache (its tokens so far), with room for
  // `max_tokens` in all (at least from's length); std::invalid_argument otherwise.
  std::unique_ptr<Sequence> fork(const Sequence& from, int64_t max_tokens) const {
    return fork_prefix(from, from.length(), max_tokens);
  }
  // A new sequence holding a copy of the first `tokens` (1..from's length) of `from`'s cache,
  // with room for `max_tokens` in all (at least `tokens`); std::invalid_argument otherwise.
  // The KV of a position depends only on the tokens up to it, so a prefix of any sequence
  // is the cache of every sequence that starts with the same tokens (prefix caching).
  virtual std::unique_ptr<Sequence> fork_prefix(const Sequence& from, int64_t tokens,
                                                int64_t max_tokens) const = 0;

  // One sequence's part of a step: `tokens` appended to `sequence` (a prefill chunk when
  // several, a decode step when one); `logits`: whether to return the logits at its last
  // position (a prefill chunk that ends before the prompt does needs none).
  struct StepInput {
    Sequence* sequence = nullptr;
    std::vector<int64_t> tokens;
    bool logits = true;
  };
  // One forward pass over every input; returns one vector per input: the logits at its
  // last position (vocab floats), or empty when it asked for none. Each input needs at
  // least one token, ids in [0, vocab), room in its sequence, and a sequence of its own
  // (no sequence twice); otherwise std::invalid_argument before anything runs.
  virtual std::vector<std::vector<float>> step_batch(
      const std::vector<StepInput>& inputs) const = 0;
  // A step of one sequence: step_batch({{&sequence, tokens}}).front().
  std::vector<float> step(Sequence& sequence, const std::vector<int64_t>& tokens) const;
  // Greedy generation: prefill `prompt`, then `new_tokens` decode steps.
  std::vector<int64_t> generate(const std::vector<int64_t>& prompt, int64_t new_tokens) const;
};

}  // namespace tessera
