#pragma once

// LlmEndpoint: live LLM serving on the engine (docs/llm-serve.md#runtime). The run's
// deployment of one LLM task runs as the simulator runs it: an Engine whose every instance
// has an LlmInstanceScheduler, the run's dispatcher choosing the instance of each request,
// and the engine's ledger ending every request exactly once with the engine's outcome rule
// (ok / late against the app's SLO, TTFT and TPOT SLOs; dropped with the scheduler's
// reason; failed). This endpoint is the engine's real-time EngineDriver and its
// EngineObserver, as Endpoint is for a pipeline app: each step an instance's scheduler
// plans runs on the libtorch Decoder on that instance's own worker thread (llm_step.hpp),
// and the engine hears of its end when it has really run, on the steady clock.
//
// What the ledger does not hold lives in a side table keyed by request id: the request's
// tokens, its decoder Sequence and its client's callbacks. Tokens reach the client as they
// are produced (on_token, from the instance's thread); its end comes once (on_end, from the
// loop) with the engine's RequestRecord. A client that goes away (on_token returns false) is
// ended in the ledger at once as dropped with DropReason::kCancelled (Engine::stop_request:
// its scheduler frees its KV blocks now or when the running step ends); a request that
// emits its stop token ends ok or late with that step (LlmInstanceScheduler::
// finish_with_step); a decoder error fails the request.
//
// Threads: submit() from any thread; the engine, the side table and every callback into
// the ledger run on the EventLoop (one thread at a time); a step's decoder work runs on its
// instance's Executor thread. stats() from any thread. shutdown() from the owner, once,
// while the loop runs; the destructor after the loop has stopped.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/driver.hpp"
#include "engine/engine.hpp"
#include "llm/llm_scheduler.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/executor.hpp"
#include "serve/runtime/llm_request.hpp"
#include "serve/runtime/llm_step.hpp"
#include "serve/runtime/steady_clock.hpp"
#include "spec/run_spec.hpp"

namespace tessera {

// What the endpoint reports for metrics and step logs; called on the loop thread.
class LlmObserver {
 public:
  virtual ~LlmObserver() = default;
  // A step of `instance` ran: the scheduler's figures and its measured seconds.
  virtual void on_llm_step(WorkerId /*instance*/, const LlmStepStats&, Time /*measured_s*/) {}
  virtual void on_llm_end(const LlmRequestEnd&) {}
};

struct LlmInstanceStats {
  uint64_t steps = 0;     // steps started
  uint64_t finished = 0;  // requests whose last token it produced
  uint32_t kv_used = 0;   // KV blocks in use
  std::size_t held = 0;   // requests waiting or admitted
};

struct LlmEndpointStats {
  uint32_t kv_used = 0;  // over the instances
  uint32_t kv_total = 0;
  std::size_t waiting = 0;      // in the schedulers' waiting lines and queues
  std::size_t running = 0;      // admitted
  uint64_t prefix_queries = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_hits = 0;     // ... and found there
  uint64_t preemptions = 0;
  uint64_t steps = 0;
  std::vector<LlmInstanceStats> instances;  // by instance (WorkerId)
  uint64_t submitted = 0;                   // requests the ledger has taken
  std::size_t in_flight = 0;                // ... and not yet ended
};

class LlmEndpoint final : public EngineDriver, public EngineObserver {
 public:
  // `run` gives the app (one task), its deployment (the instances), profiles, policies,
  // seed, the llm: section's scheduler and the cost model that predicts steps for the
  // SLO-aware admission (the real steps are measured). `decoders`: one per instance, or one
  // shared by all (its steps then run one at a time). `observer` may be null and must
  // outlive the endpoint; so must `clock` and `loop`.
  LlmEndpoint(const RunSpec& run, std::vector<std::shared_ptr<const Decoder>> decoders,
              const SteadyClock& clock, EventLoop& loop, LlmObserver* observer = nullptr);
  ~LlmEndpoint() override;
  LlmEndpoint(const LlmEndpoint&) = delete;
  LlmEndpoint& operator=(const LlmEndpoint&) = delete;

  // Any thread. `callbacks.on_end` runs exactly once: when the request ends, or, if the
  // endpoint stops first, as failed ("the server is shutting down").
  void submit(LlmRequest request, LlmCallbacks callbacks);
  // Loop running: ends every request not yet ended as failed ("the server is shutting
  // down"), in the ledger where its instance can let go of it, and stops the instances'
  // threads. Idempotent.
  void shutdown();

  LlmEndpointStats stats() const;
  const App& app() const { return app_; }
  std::size_t instances() const { return executors_.size(); }

  // EngineDriver.
  void start_batch(const Worker& worker) override;
  void set_timer(WorkerId worker, uint64_t generation, Time at) override;
  void deliver_later(std::span<const Item> items, Time at) override;
  // EngineObserver.
  void on_request_done(const RequestRecord& record) override;
  void on_llm_step(const Worker& worker, const LlmStepStats& stats) override;

 private:
  void admit(std::shared_ptr<LlmLiveRequest> request);
  // The step of `worker` has run (loop thread): its outcome goes into the ledger.
  void step_done(WorkerId worker, LlmStepResult result);
  void publish_stats();

  App app_;
  std::unique_ptr<PolicySet> policies_;
  const SteadyClock& clock_;
  EventLoop& loop_;
  LlmObserver* observer_;
  std::vector<std::shared_ptr<const Decoder>> decoders_;  // by instance, or one for all
  std::vector<LlmInstanceScheduler*> schedulers_;         // by WorkerId, owned by the engine
  std::vector<std::unique_ptr<Executor>> executors_;      // by WorkerId
  std::vector<LlmStepStats> step_stats_;                  // the running step's, by WorkerId
  // Prefix caching: the KV of every cached prompt block of each instance (by WorkerId), by
  // the block's serial in that instance's KvBlockPool: the cache of the request that
  // computed it (which holds the block's whole prefix). Dropped when the pool evicts it.
  using CachedKv = std::unordered_map<uint64_t, std::shared_ptr<const Decoder::Sequence>>;
  std::vector<CachedKv> cached_kv_;
  std::unique_ptr<Engine> engine_;

  // Loop thread only.
  std::unordered_map<uint64_t, std::shared_ptr<LlmLiveRequest>> requests_;  // by engine id
  std::vector<LlmInstanceScheduler::StepEntry> entries_;
  bool shut_down_ = false;

  std::atomic<bool> stopping_{false};
  mutable std::mutex stats_mutex_;
  LlmEndpointStats stats_;
};

}  // namespace tessera
