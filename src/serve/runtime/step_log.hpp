#pragma once

// LlmStepLog: a CSV line per step the live LLM runtime runs (`tessera serve
// --llm-step-log FILE`; docs/llm-serve.md#measured-step-costs): its prompt tokens
// prefilled, tokens decoded, KV blocks held, the cost model's time for it and its measured
// time, so a simulation's step times can be checked step by step against the live ones.
// Forwards every call to the next observer (the server's metrics).
//
// Called on the runtime thread only (LlmRuntimeObserver); owns its file.

#include <fstream>
#include <string>

#include "serve/runtime/llm_runtime.hpp"

namespace tessera {

class LlmStepLog final : public LlmRuntimeObserver {
 public:
  // std::runtime_error naming the file when it cannot be written.
  LlmStepLog(const std::string& path, LlmRuntimeObserver& next);
  void on_llm_step(const LlmStepStats& stats, Time measured_s) override;
  void on_llm_end(const GenResult& result) override { next_.on_llm_end(result); }

 private:
  std::ofstream out_;
  LlmRuntimeObserver& next_;
  uint64_t steps_ = 0;
};

}  // namespace tessera
