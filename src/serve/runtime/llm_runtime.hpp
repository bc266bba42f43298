#pragma once

// LlmRuntime: one live LLM instance (docs/llm-serve.md#runtime). The SAME
// LlmInstanceScheduler the simulator runs decides every step; this runtime is its host and
// real-time driver: each step it plans is executed on the libtorch Decoder (one prefill
// and/or one decode iteration over the requests in it, token by token on their own
// Sequence, greedy), and its on_step_done follows when the step has really run, on the
// steady clock. A request stays on this instance; a preempted request's Sequence is freed
// and rebuilt from its prompt and the tokens it produced (recompute).
//
// Every submitted request ends exactly once through its on_end: ok / late (against the
// app's TTFT, TPOT and end-to-end SLOs, as the engine judges them), dropped (with the
// scheduler's reason), failed (a decoder error, or shutdown), or cancelled (the client went
// away: on_token returned false or cancel() was called). A cancelled request's Sequence is
// freed at once, and the scheduler lets go of it (LlmInstanceScheduler::cancel): its KV
// blocks come back at once, or when the running step it is in ends.
//
// Threads: one runtime thread owns the scheduler, the decoder calls and the requests;
// submit() and cancel() may be called from any thread; the callbacks run on the runtime
// thread and must not block. stop() from the owner, once (also by the destructor).

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/cost_model.hpp"
#include "engine/driver.hpp"
#include "engine/instance_scheduler.hpp"
#include "llm/llm_scheduler.hpp"
#include "llm/llm_scheduler_config.hpp"
#include "serve/runtime/steady_clock.hpp"

namespace tessera {

class Decoder;

struct GenRequest {
  std::vector<int64_t> prompt;  // token ids, at least one
  uint32_t max_tokens = 16;     // tokens generated at most
  // EOS stop, when the request asks for it: the request ends (ok, finish reason "stop")
  // as soon as the model emits this id (the tokenizer's end-of-sequence token), which is
  // counted but not handed to on_token. < 0: no stop, max_tokens are generated (random
  // weights emit it only by chance).
  int64_t stop_token = -1;
};

enum class GenEnd : uint8_t { kOk, kLate, kDropped, kFailed, kCancelled };
std::string_view gen_end_name(GenEnd end);

struct GenResult {
  GenEnd end = GenEnd::kOk;
  DropReason reason = DropReason::kNone;  // kDropped
  std::string error;                      // kFailed
  uint32_t prompt_tokens = 0;
  uint32_t output_tokens = 0;
  Time ttft = -1.0;  // s; < 0 when no token was produced
  Time tpot = -1.0;  // s; mean time per output token after the first
  uint32_t preemptions = 0;
  bool stopped = false;  // ended by GenRequest::stop_token before max_tokens
};

struct GenCallbacks {
  // A token was generated; false: the client is gone, cancel the request.
  std::function<bool(int64_t token)> on_token;
  // The request ended (exactly once).
  std::function<void(const GenResult&)> on_end;
};

// What the runtime reports, for metrics; called on the runtime thread.
class LlmRuntimeObserver {
 public:
  virtual ~LlmRuntimeObserver() = default;
  virtual void on_llm_step(const LlmStepStats&, Time /*measured_s*/) {}
  virtual void on_llm_end(const GenResult&) {}
};

struct LlmRuntimeStats {
  uint32_t kv_used = 0;
  uint32_t kv_total = 0;
  std::size_t waiting = 0;  // in the scheduler's waiting line or the inbox
  std::size_t running = 0;  // admitted
  uint64_t preemptions = 0;
  uint64_t steps = 0;
};

struct LlmServeSlos {
  Time slo = 1e9;  // end-to-end (App::slo)
  Time ttft_slo = 0.0;
  Time tpot_slo = 0.0;
};

class LlmRuntime final : private SchedulerHost {
 public:
  // `cost` predicts steps for the scheduler's SLO-aware admission (the real steps are
  // measured). `observer` may be null and must outlive the runtime.
  LlmRuntime(std::shared_ptr<const Decoder> decoder, const LlmSchedulerConfig& config,
             std::shared_ptr<const CostModel> cost, LlmServeSlos slos,
             LlmRuntimeObserver* observer = nullptr);
  ~LlmRuntime() override;
  LlmRuntime(const LlmRuntime&) = delete;
  LlmRuntime& operator=(const LlmRuntime&) = delete;

  void start();
  // Ends every request not yet ended as failed ("the server is shutting down") and joins.
  // Idempotent.
  void stop();

  // Any thread. Returns the request's id (for cancel).
  uint64_t submit(GenRequest request, GenCallbacks callbacks);
  void cancel(uint64_t id);
  LlmRuntimeStats stats() const;
  // Requests submitted and not yet ended.
  std::size_t in_flight() const;
  const SteadyClock& clock() const { return clock_; }

 private:
  struct Req;
  // SchedulerHost.
  Time now() const override { return clock_.now(); }
  bool admit(Worker&, const Item&, Time, Time) override { return true; }
  void start_step(Worker& worker) override;
  void set_timer(Worker& worker, Time at) override;
  void drop_queued(Worker& worker, const Item& item, DropReason reason) override;
  void start_step(Worker& worker, const StepContents& contents) override;
  void record_tokens(const Item& item, const TokenTimes& times) override;
  void report_llm_step(const Worker& worker, const LlmStepStats& stats) override;

  void run();
  void take_inbox(std::unique_lock<std::mutex>& lock);
  void execute_step();
  void end(uint32_t slot, GenResult result);
  void publish_stats();

  std::shared_ptr<const Decoder> decoder_;
  std::shared_ptr<const CostModel> cost_;
  LlmServeSlos slos_;
  LlmRuntimeObserver* observer_;
  SteadyClock clock_;
  Worker worker_;
  std::unique_ptr<LlmInstanceScheduler> scheduler_;

  // Runtime thread only.
  std::unordered_map<uint32_t, std::unique_ptr<Req>> reqs_;
  uint32_t next_slot_ = 1;
  bool step_pending_ = false;
  std::vector<LlmInstanceScheduler::StepEntry> entries_;
  LlmStepStats last_stats_;

  // Shared with other threads.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  struct Incoming {
    uint64_t id;
    GenRequest request;
    GenCallbacks callbacks;
    Time arrival;
  };
  std::vector<Incoming> inbox_;
  std::vector<uint64_t> cancels_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  bool joined_ = false;  // stop() joined the thread: submit() ends new requests itself
  bool started_ = false;
  std::size_t in_flight_ = 0;
  LlmRuntimeStats stats_;
  std::thread thread_;
};

}  // namespace tessera
