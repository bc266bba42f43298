#include "serve/runtime/llm_step.hpp"

#include <algorithm>
#include <exception>
#include <string>

namespace tessera {

LlmStepResult run_llm_step(const Decoder& decoder, std::span<const LlmStepItem> items,
                           const SteadyClock& clock) {
  LlmStepResult result;
  const Time started = clock.now();
  const auto fail = [&](LlmLiveRequest& r, const std::string& what) {
    r.fail("the model failed: " + what);
    result.failed.push_back(r.id);
  };
  // One forward pass for every request of the step (Decoder::step_batch): each prefill
  // chunk or decode token on its own sequence.
  std::vector<Decoder::StepInput> inputs;
  std::vector<const LlmStepItem*> owners;  // owners[i]: the item of inputs[i]
  inputs.reserve(items.size());
  owners.reserve(items.size());
  for (const LlmStepItem& item : items) {
    LlmLiveRequest& r = *item.request;
    const LlmInstanceScheduler::StepEntry& e = item.entry;
    if (r.ended()) continue;  // answered already (the server is stopping): nothing to compute
    try {
      Decoder::StepInput in;
      if (e.prefill > 0 && e.fork_from != 0) {
        // A prefix cache hit: the cached blocks' KV, then the rest of the prompt; when that
        // KV is gone, the whole prompt on a fresh cache.
        if (item.cached_prefix != nullptr && item.cached_prefix->length() >= e.prefill_from) {
          in.sequence = &r.forked_sequence(decoder, *item.cached_prefix, e.prefill_from);
          in.tokens = r.tokens_between(e.prefill_from, e.prefill_from + e.prefill);
        } else {
          in.sequence = &r.fresh_sequence(decoder);
          in.tokens = r.tokens_between(0, e.prefill_from + e.prefill);
        }
      } else if (e.prefill > 0) {
        // A new request, or a recompute after a preemption: a fresh cache.
        in.sequence = e.prefill_from == 0 || r.sequence() == nullptr ? &r.fresh_sequence(decoder)
                                                                     : r.sequence();
        in.tokens = r.tokens_between(e.prefill_from, e.prefill_from + e.prefill);
      } else if (e.decode && r.sequence() != nullptr) {
        in.sequence = r.sequence();
        in.tokens = {r.last_token()};
      } else {
        continue;
      }
      in.logits = e.emits;
      inputs.push_back(std::move(in));
      owners.push_back(&item);
    } catch (const std::exception& ex) {
      fail(r, ex.what());
    }
  }
  std::vector<std::vector<float>> outputs(inputs.size());
  if (!inputs.empty()) {
    try {
      outputs = decoder.step_batch(inputs);
    } catch (const std::exception&) {
      // One request's input spoils the whole pass (step_batch checks every input before it
      // runs anything): run them one by one, so that only the requests that fail are failed.
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        try {
          outputs[i] = decoder.step_batch({inputs[i]}).front();
        } catch (const std::exception& ex) {
          fail(*owners[i]->request, ex.what());
        }
      }
    }
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    LlmLiveRequest& r = *owners[i]->request;
    const LlmInstanceScheduler::StepEntry& e = owners[i]->entry;
    const std::vector<float>& logits = outputs[i];
    if (!e.emits || logits.empty()) continue;  // (a failed request has none)
    SampledToken token;
    try {
      token = r.sample(logits);
    } catch (const std::exception& ex) {
      fail(r, ex.what());
      continue;
    }
    switch (r.take_token(token)) {
      case LlmLiveRequest::TokenFate::kSent:
        break;
      case LlmLiveRequest::TokenFate::kStop:
        result.stopped.emplace_back(r.id, e.request);
        break;
      case LlmLiveRequest::TokenFate::kClientGone:
        result.left.push_back(r.id);
        break;
    }
  }
  result.measured_s = clock.now() - started;
  return result;
}

}  // namespace tessera
