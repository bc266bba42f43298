#pragma once

// Timed greedy generation on the libtorch Decoder (`tessera llm generate`): the prompt's
// prefill, whose end is the time to the first token, then one decode step per further
// token, each taking the argmax of the logits. Single-threaded; runs the decoder.

#include <cstdint>
#include <vector>

namespace tessera {

class Decoder;

struct TimedGeneration {
  std::vector<int64_t> tokens;  // generated, `new_tokens` of them
  double ttft_s = 0.0;          // the prefill, to the first token
  double decode_s = 0.0;        // the decode steps after it, together
  uint64_t kv_bytes = 0;        // the sequence's KV cache at the end
};

// `prompt` must hold at least one token; `new_tokens` >= 1.
TimedGeneration generate_greedy_timed(const Decoder& decoder, const std::vector<int64_t>& prompt,
                                      int64_t new_tokens);

}  // namespace tessera
