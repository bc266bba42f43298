#pragma once

// LlmStepLog: a CSV line per step the live LLM instances run (`tessera serve
// --llm-step-log FILE`; docs/llm-serve.md#measured-step-costs): its prompt tokens
// prefilled, tokens decoded, KV blocks its instance held, the cost model's time for it and
// its measured time, so a simulation's step times can be checked step by step against the
// live ones. Forwards every call to the next observer (the server's metrics).
//
// Called on the LLM endpoint's loop only (LlmObserver); owns its file.

#include <fstream>
#include <string>

#include "serve/runtime/llm_endpoint.hpp"

namespace tessera {

class LlmStepLog final : public LlmObserver {
 public:
  // std::runtime_error naming the file when it cannot be written.
  LlmStepLog(const std::string& path, LlmObserver& next);
  void on_llm_step(WorkerId instance, const LlmStepStats& stats, Time measured_s) override;
  void on_llm_end(const LlmRequestEnd& end) override { next_.on_llm_end(end); }

 private:
  std::ofstream out_;
  LlmObserver& next_;
  uint64_t steps_ = 0;
};

}  // namespace tessera
