#pragma once

// One planned LLM step run on the libtorch Decoder (docs/llm-serve.md#runtime): for every
// request in it, the prefill of its planned tokens (a chunk, with chunked prefill; from
// position 0 after a preemption, when its cache is rebuilt from its prompt and the tokens
// it produced: recompute) or one decode of its last token, each on the request's own
// Decoder::Sequence, all of them in one batched forward pass (Decoder::step_batch; when the
// pass refuses an input, the inputs run one by one so only the failing requests fail),
// then the greedy (argmax) token of those that emit one. What the step
// does to each request is its scheduler's plan (LlmInstanceScheduler::StepEntry); the
// ledger hears of the result afterwards (LlmEndpoint). This is the only code that runs the
// decoder for live serving.
//
// Threads: run on the instance's worker thread; the requests' tokens and sequences are
// this thread's while the step runs (llm_request.hpp).

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "llm/llm_scheduler.hpp"
#include "serve/runtime/llm_request.hpp"
#include "serve/runtime/steady_clock.hpp"

namespace tessera {

struct LlmStepItem {
  std::shared_ptr<LlmLiveRequest> request;
  LlmInstanceScheduler::StepEntry entry;
  // entry.fork_from's KV (a prefix cache hit): the request's cache starts as a copy of its
  // first entry.prefill_from tokens. Null with a hit: the KV is gone, the request prefills
  // its whole prompt (the same tokens come out, later).
  std::shared_ptr<const Decoder::Sequence> cached_prefix;
};

// What happened to the step's requests, for the ledger.
struct LlmStepResult {
  std::vector<std::pair<uint64_t, RequestSlot>> stopped;  // emitted their stop token
  std::vector<uint64_t> left;                             // their client went away
  std::vector<uint64_t> failed;                           // the decoder failed them
  Time measured_s = 0.0;                                  // the step's decoder time
};

LlmStepResult run_llm_step(const Decoder& decoder, std::span<const LlmStepItem> items,
                           const SteadyClock& clock);

}  // namespace tessera
