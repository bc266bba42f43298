#pragma once

// The engine's contract with whoever runs it (EngineDriver: the simulator on virtual time,
// the server on real time) and with whoever watches it (EngineObserver: metrics, the
// server's answers). Both are called on the engine's thread, from inside engine calls.

#include <span>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/item.hpp"
#include "engine/worker.hpp"

namespace tessera {

// What the engine asks of whoever runs it: the simulator (virtual time, profiled
// latencies) or the server (real time, real models). Every request is answered by a
// later call back into the engine.
class EngineDriver {
 public:
  virtual ~EngineDriver() = default;
  // Execute worker.running with worker.variants[worker.running_variant]; call
  // Engine::on_batch_done(worker.id) when it finishes, never from inside this call.
  // worker.running_duration is the cost model's time for the step (the simulator takes it).
  virtual void start_batch(const Worker& worker) = 0;
  // Call Engine::on_timer(worker, generation) at time `at`.
  virtual void set_timer(WorkerId worker, uint64_t generation, Time at) = 0;
  // Hand a copy of `items` back through Engine::deliver at time `at` (a network hop or a
  // link transfer). The span is only valid during the call.
  virtual void deliver_later(std::span<const Item> items, Time at) = 0;
};

// The record of one finished request, exactly one per submitted request.
struct RequestRecord {
  uint64_t id = 0;
  Time arrival = 0.0;
  Time finish = 0.0;  // completion, or the time of the drop / failure
  Outcome outcome = Outcome::kOk;
  TaskId drop_task = 0;  // for kDropped / kFailed: where it happened
  DropReason reason = DropReason::kNone;
  Time gpu_time = 0.0;  // device time spent on this request's items
  // ... per task (indexed by TaskId), when the engine tracks it; empty otherwise. Points
  // into the engine's memory: valid only during EngineObserver::on_request_done.
  std::span<const Time> gpu_by_task;
  double accuracy = 0.0;  // mean over its leaf results (completed requests)
  // Per-sub-request accounting (JigsawServe §4.5): final results delivered plus items lost
  // (dropped, failed or cancelled), each lost item weighted by the results it would have
  // yielded (Engine::subrequest_weight); violated = late results + lost weight.
  double subrequests = 0.0;
  double subrequests_violated = 0.0;
  // LLM requests (their instance scheduler reported tokens; SchedulerHost::record_tokens):
  // time to first token and mean time per output token after the first, both < 0 when
  // not reported; tokens generated; times the request was preempted.
  Time ttft = -1.0;
  Time tpot = -1.0;
  uint32_t output_tokens = 0;
  uint32_t preemptions = 0;
};

// The token timings of one LLM request, reported by its instance scheduler before the
// request's item finishes or is dropped.
struct TokenTimes {
  Time ttft = -1.0;  // first token minus arrival; < 0 when no token was produced
  Time tpot = -1.0;  // (last token - first token) / (tokens - 1); 0 for a single token
  uint32_t tokens = 0;
  uint32_t preemptions = 0;
};

// One step of an LLM instance, for metrics: the KV-cache blocks in use while it runs, the
// tokens it prefills and decodes, and the preemptions decided before it.
struct LlmStepStats {
  uint32_t kv_used_blocks = 0;
  uint32_t kv_total_blocks = 0;
  uint32_t prefill_tokens = 0;
  uint32_t decode_tokens = 0;
  uint32_t preemptions = 0;
  // Prefix caching: prompt tokens of the requests admitted for this step, and how many of
  // them were found in the cache (their prefill skipped).
  uint64_t prefix_queries = 0;
  uint64_t prefix_hits = 0;
  Time duration = 0.0;  // the cost model's time for the step
};

// Receives what happens, for metrics. Default implementations ignore everything.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // The request's outcome is final (all its items are accounted for).
  virtual void on_request_done(const RequestRecord&) {}
  // A request was dropped or failed now; sibling items may still be draining, and
  // on_request_done follows when they have. The server answers the client here.
  virtual void on_request_stopped(uint64_t /*id*/, Outcome, TaskId /*task*/, DropReason) {}
  virtual void on_batch_start(const Worker&, Time /*now*/) {}
  virtual void on_batch_done(const Worker&, Time /*duration*/, Time /*now*/) {}
  // An LLM instance started a step (after on_batch_start).
  virtual void on_llm_step(const Worker&, const LlmStepStats&) {}
};

}  // namespace tessera
