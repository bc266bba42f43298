#include "models/llm_generate.hpp"

#include <chrono>

#include "llm_torch/decoder.hpp"
#include "sampling/sampler.hpp"

namespace tessera {

TimedGeneration generate_timed(const Decoder& decoder, const std::vector<int64_t>& prompt,
                               int64_t new_tokens, Sampler& sampler) {
  using Clock = std::chrono::steady_clock;
  TimedGeneration g;
  const auto seq = decoder.start(static_cast<int64_t>(prompt.size()) + new_tokens);
  const auto t0 = Clock::now();
  std::vector<float> logits = decoder.step(*seq, prompt);
  const auto t1 = Clock::now();
  for (int64_t i = 0; i < new_tokens; ++i) {
    const SampledToken next = sampler.sample(logits);
    if (next.stop) {
      g.stopped = true;
      break;
    }
    g.tokens.push_back(next.id);
    if (i + 1 < new_tokens) logits = decoder.step(*seq, {next.id});
  }
  const auto t2 = Clock::now();
  g.ttft_s = std::chrono::duration<double>(t1 - t0).count();
  g.decode_s = std::chrono::duration<double>(t2 - t1).count();
  g.kv_bytes = seq->kv_bytes();
  return g;
}

}  // namespace tessera
