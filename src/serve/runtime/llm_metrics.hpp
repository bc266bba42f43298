#pragma once

// LlmServeMetrics: the live LLM server's Prometheus metrics (docs/llm-serve.md#metrics):
// TTFT and TPOT histograms, generated and prompt token counters (tokens/s is the rate of
// tessera_llm_generated_tokens_total), requests by outcome and drop reason, preemptions,
// steps and their measured seconds (and the cost model's seconds for the same steps), and, sampled
// at scrape time from the runtime, the KV blocks used and total and the waiting and running request
// counts.
//
// Fed by the runtime thread (LlmRuntimeObserver) and the HTTP threads (HTTP errors);
// guarded by its own mutex; render() from any thread.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "serve/metrics/server_metrics.hpp"
#include "serve/runtime/llm_runtime.hpp"

namespace tessera {

class LlmServeMetrics final : public LlmRuntimeObserver {
 public:
  explicit LlmServeMetrics(std::string model);
  void on_llm_step(const LlmStepStats& stats, Time measured_s) override;
  void on_llm_end(const GenResult& result) override;
  void http_error(int status);
  void rejected();  // 429: too many requests in flight

  std::string render(const LlmRuntimeStats& runtime) const;

 private:
  std::string model_;
  mutable std::mutex mutex_;
  PromHistogram ttft_;
  PromHistogram tpot_;
  uint64_t generated_ = 0;
  uint64_t prompt_ = 0;
  uint64_t steps_ = 0;
  double step_seconds_ = 0.0;
  double step_predicted_seconds_ = 0.0;  // the cost model's time for the same steps
  uint64_t decode_steps_ = 0;            // steps that prefill nothing
  double decode_step_seconds_ = 0.0;
  double decode_step_predicted_seconds_ = 0.0;
  uint64_t decode_step_tokens_ = 0;
  uint64_t prefill_tokens_ = 0;
  uint64_t decode_tokens_ = 0;
  uint64_t rejected_ = 0;
  std::array<uint64_t, 5> ends_{};  // by GenEnd
  std::array<uint64_t, static_cast<std::size_t>(DropReason::kCount)> drops_{};
  std::map<int, uint64_t> http_errors_;
};

}  // namespace tessera
