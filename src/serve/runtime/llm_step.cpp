#include "serve/runtime/llm_step.hpp"

#include <algorithm>
#include <exception>
#include <string>

namespace tessera {

LlmStepResult run_llm_step(const Decoder& decoder, std::span<const LlmStepItem> items,
                           const SteadyClock& clock) {
  LlmStepResult result;
  const Time started = clock.now();
  for (const LlmStepItem& item : items) {
    LlmLiveRequest& r = *item.request;
    const LlmInstanceScheduler::StepEntry& e = item.entry;
    if (r.ended()) continue;  // answered already (the server is stopping): nothing to compute
    try {
      std::vector<float> logits;
      if (e.prefill > 0) {
        // A new request, or a recompute after a preemption: a fresh cache.
        Decoder::Sequence& seq = e.prefill_from == 0 || r.sequence() == nullptr
                                     ? r.fresh_sequence(decoder)
                                     : *r.sequence();
        logits = decoder.step(seq, r.tokens_between(e.prefill_from, e.prefill_from + e.prefill));
      } else if (e.decode && r.sequence() != nullptr) {
        logits = decoder.step(*r.sequence(), {r.last_token()});
      }
      if (!e.emits || logits.empty()) continue;
      const int64_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
      switch (r.take_token(best)) {
        case LlmLiveRequest::TokenFate::kSent:
          break;
        case LlmLiveRequest::TokenFate::kStop:
          result.stopped.emplace_back(r.id, e.request);
          break;
        case LlmLiveRequest::TokenFate::kClientGone:
          result.left.push_back(r.id);
          break;
      }
    } catch (const std::exception& ex) {
      r.fail(std::string("the model failed: ") + ex.what());
      result.failed.push_back(r.id);
    }
  }
  result.measured_s = clock.now() - started;
  return result;
}

}  // namespace tessera
