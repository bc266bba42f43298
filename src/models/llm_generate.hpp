#pragma once

// Timed generation on the libtorch Decoder (`tessera llm generate`): the prompt's prefill,
// whose end is the time to the first token, then one decode step per further token, each
// token chosen by the caller's Sampler (greedy, or sampled as its parameters say) until
// `new_tokens` are generated or the sampler picks a stop token. Single-threaded; runs the
// decoder; the sampler is the caller's and is advanced by the call.

#include <cstdint>
#include <vector>

namespace tessera {

class Decoder;
class Sampler;

struct TimedGeneration {
  std::vector<int64_t> tokens;  // generated: `new_tokens` of them, fewer when stopped
  bool stopped = false;         // the sampler chose a stop token (not in `tokens`)
  double ttft_s = 0.0;          // the prefill, to the first token
  double decode_s = 0.0;        // the decode steps after it, together
  uint64_t kv_bytes = 0;        // the sequence's KV cache at the end
};

// `prompt` must hold at least one token; `new_tokens` >= 1.
TimedGeneration generate_timed(const Decoder& decoder, const std::vector<int64_t>& prompt,
                               int64_t new_tokens, Sampler& sampler);

}  // namespace tessera
