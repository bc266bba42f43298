#pragma once

// LlmServeMetrics: the live LLM server's Prometheus metrics (docs/llm-serve.md#metrics):
// TTFT and TPOT histograms, generated and prompt token counters (tokens/s is the rate of
// tessera_llm_generated_tokens_total), requests by outcome and drop reason, steps and their
// measured seconds (and the cost model's seconds for the same steps), and, sampled at
// scrape time, the KV blocks used and total, the waiting and running requests, preemptions
// and each instance's steps.
//
// Fed by the LLM endpoint's loop (steps, ends, through the server) and the HTTP threads
// (refusals); guarded by its own mutex; render() from any thread.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "engine/driver.hpp"
#include "serve/metrics/prometheus.hpp"

namespace tessera {

class LlmServeMetrics {
 public:
  // What render() samples from the running instances.
  struct Gauges {
    uint32_t kv_used = 0;  // over the instances
    uint32_t kv_total = 0;
    std::size_t waiting = 0;
    std::size_t running = 0;
    uint64_t preemptions = 0;
    uint64_t prefix_cache_queries = 0;     // prompt tokens looked up in the prefix cache
    uint64_t prefix_cache_hits = 0;        // ... and found there
    std::vector<uint64_t> instance_steps;  // by instance
  };

  explicit LlmServeMetrics(std::string model);
  // A step ran: the scheduler's figures (the cost model's duration) and its measured time.
  void step(const LlmStepStats& stats, Time measured_s);
  // A request ended as the ledger's `record` says, with its prompt and generated tokens.
  void request_ended(const RequestRecord& record, uint32_t prompt_tokens, uint32_t output_tokens);
  void http_error(int status);
  void rejected();  // 429: too many requests in flight

  std::string render(const Gauges& gauges) const;

 private:
  // The `outcome` label: ok, late, dropped, failed, and cancelled (dropped because the
  // client went away).
  enum End : uint8_t { kOk, kLate, kDropped, kFailed, kCancelled, kEnds };

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
  std::array<uint64_t, kEnds> ends_{};
  std::array<uint64_t, static_cast<std::size_t>(DropReason::kCount)> drops_{};
  std::map<int, uint64_t> http_errors_;
};

}  // namespace tessera
