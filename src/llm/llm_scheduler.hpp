#pragma once

// LlmInstanceScheduler: the InstanceScheduler of one LLM instance (docs/llm.md). Its steps
// are prefills (whole prompts, or chunks of them) and decode iterations over the requests
// it has admitted; a request stays on its instance from admission to its last token. The
// policy (LlmSchedulerConfig::policy) decides each step: FCFS one at a time, static batches,
// continuous batching with a per-iteration token budget, or chunked prefill mixed with
// decode.
//
// Memory: a KvBlockPool per instance. A request is admitted only when the blocks of its
// prompt are free (FCFS and static reserve prompt + output at once); when a decoding
// request needs a block and none is free, the newest admitted request is preempted: its
// blocks are freed and it goes back to the front of the waiting line, to be prefilled
// again over its prompt and the tokens it had produced (recompute).
//
// Prefix caching (KvBlockPool): on admission the request takes a reference on the cached
// blocks its prompt starts with (whole blocks, never its last token, as vLLM) and prefills
// only the rest; every whole prompt block it prefills is committed to the cache. A request's
// prompt ids come from set_prompt_ids (the live server's tokens) or, by default, are
// synthesised from the item's shared prefix (Item::prefix_group, the simulator); a request
// with neither has nothing to share and is never looked up.
//
// Accounting: the scheduler takes every item from the worker's queue into its own waiting
// line at once; each item then ends exactly once through the engine: dropped through
// SchedulerHost::drop_queued (KV capacity, tessera's SLO-aware admission), or finished by
// the engine as part of worker.running at the step that produces its last token (its
// TTFT/TPOT reported just before through SchedulerHost::record_tokens), or handed back by
// release(). Preemption moves a request, never ends it.
//
// Owns its waiting line, its admitted requests and its KV pool; holds references to the
// host and the cost model (owned by the engine). Not thread-safe.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "engine/instance_scheduler.hpp"
#include "llm/kv_cache.hpp"
#include "llm/llm_scheduler_config.hpp"

namespace tessera {

class LlmInstanceScheduler final : public InstanceScheduler {
 public:
  LlmInstanceScheduler(const LlmSchedulerConfig& config, SchedulerHost& host,
                       const CostModel& cost);

  void on_queue_grew(Worker& worker) override;
  void on_step_done(Worker& worker) override;
  void on_timer(Worker& worker) override;
  void on_settings_changed(Worker& worker) override;
  void release(Worker& worker, std::vector<Item>& out) override;

  // The request's client went away (the live runtime, which ends the request itself as
  // cancelled): a waiting request leaves the line now; an admitted one gives its KV blocks
  // back now when it is not in the running step, else when that step is done, emitting
  // nothing more. True when the scheduler has let go of the item (it will come back
  // neither through worker.running nor through drop_queued); false when the request is
  // unknown here or its item ends with the running step anyway.
  bool cancel(Worker& worker, RequestSlot request) override;
  // The request stops at the token the running step produces for it (a live request that
  // emitted its end-of-sequence token): its item finishes with the step, as if that token
  // were its last. Called between the step's start and its end; false when the request is
  // not in the running step or gets no token from it.
  bool finish_with_step(Worker& worker, RequestSlot request);

  // Introspection for tests, metrics and benchmarks.
  const KvBlockPool& kv() const { return kv_; }
  KvBlockPool& kv() { return kv_; }
  // Prompt tokens of the requests admitted so far with prompt ids (all, live; those with a
  // shared prefix, simulated), and how many were found cached (vLLM's prefix cache queries
  // and hits, in tokens).
  uint64_t prefix_queries() const { return prefix_queries_; }
  uint64_t prefix_hits() const { return prefix_hits_; }
  // The prompt ids of an item, or null when it has none to share.
  using PromptIds = std::function<std::shared_ptr<const std::vector<int64_t>>(const Item&)>;
  void set_prompt_ids(PromptIds ids) { prompt_ids_ = std::move(ids); }
  // A prompt block `serial` was committed by `request` (its KV is that request's now).
  void set_on_commit(std::function<void(RequestSlot, uint64_t)> on_commit) {
    on_commit_ = std::move(on_commit);
  }
  // The ids the simulator gives an item with a shared prefix: the first
  // item.shared_prefix_tokens are its group's, the rest its own (`serial`: unique per request).
  static std::shared_ptr<const std::vector<int64_t>> synthetic_prompt_ids(const Item& item,
                                                                          uint64_t serial);
  std::size_t admitted() const { return running_.size(); }
  // The requests it holds (waiting or admitted) that have no first token yet, and their
  // prompt tokens: what a gateway in front of the instance sees as awaiting their first token.
  struct AwaitingFirst {
    std::size_t requests = 0;
    uint64_t prompt_tokens = 0;
  };
  AwaitingFirst awaiting_first_token() const;
  std::size_t waiting() const { return waiting_.size(); }
  uint64_t preemptions() const { return preemptions_; }
  // The output length the SLO predictor assumes for `item`.
  uint32_t predicted_output(const Item& item) const;

  // What the running step does to each request in it, for a real-time driver that executes
  // steps on a real model (src/llm_serve): it prefills `prefill` tokens of the request's
  // sequence (its prompt, then the tokens it produced, after a preemption) from position
  // `prefill_from` (0: the request's cache must be rebuilt from scratch, a recompute after
  // a preemption), and/or decodes one token (feeding the last token it produced).
  // `emits`: the step produces a token for it. Valid between start_step and on_step_done.
  struct StepEntry {
    RequestSlot request = 0;
    uint32_t prefill_from = 0;
    uint32_t prefill = 0;
    bool decode = false;
    bool emits = false;
    // Non-zero: the request's cache starts as a copy of the first `prefill_from` tokens of
    // the cached prefix that ends with block `fork_from` (a prefix cache hit).
    uint64_t fork_from = 0;
  };
  void step_entries(std::vector<StepEntry>& out) const;

 private:
  struct Seq {
    Item item;
    uint32_t prompt = 0;  // tokens to prefill (the prompt, plus output so far after a preemption)
    uint32_t prefilled = 0;                           // of `prompt`
    uint32_t cached = 0;                              // tokens in the KV cache
    uint32_t generated = 0;                           // output tokens produced
    uint32_t target = 1;                              // output tokens to produce
    uint32_t blocks = 0;                              // anonymous KV blocks held
    std::shared_ptr<const std::vector<int64_t>> ids;  // prompt ids to share (null: none)
    std::vector<uint64_t> cached_blocks;              // cached prompt blocks held, in prompt order
    bool commit_stopped = false;  // a block could not be committed: none after it
    uint32_t hit_tokens = 0;      // prefilled from the cache at admission
    uint32_t preemptions = 0;
    uint32_t step_prefill = 0;  // prompt tokens this step prefills
    bool step_decode = false;   // this step decodes one token
    bool done = false;          // its item was handed to the engine with the step
    bool padding = false;       // static: ended, but holds its slot until the batch ends
    bool cancelled = false;     // cancelled during the running step: leaves when it is done
    Time first_token = -1.0;
    Time last_token = -1.0;
  };

  void take_queue(Worker& worker);
  void try_step(Worker& worker);
  // Plans the next step into running_ (step_prefill / step_decode); false when idle.
  bool plan_fcfs(Worker& worker);
  bool plan_static(Worker& worker);
  bool plan_continuous(Worker& worker);
  bool plan_chunked(Worker& worker);
  // Admits the waiting line's front if its blocks are free (and, with SLO admission, it
  // can still make its TTFT and would not slow the decode past the TPOT SLO); drops the
  // front requests that can no longer make it. `reserve_output` takes the blocks of the
  // whole output too. Returns the admitted request, or nullptr.
  Seq* admit_front(Worker& worker, bool reserve_output, uint32_t max_prompt);
  // Gives every decoding request the block its next token needs, preempting the newest
  // requests when blocks run out. Returns the preemptions.
  uint32_t grow_for_decode();
  void preempt_newest();
  void start(Worker& worker, uint32_t preempted, bool padded);
  void emit_token(Seq& seq, Time now);
  void finish(const Seq& seq);
  // Every block `seq` holds goes back to the pool (its cached ones stay cached).
  void free_blocks(Seq& seq);
  uint32_t held_blocks(const Seq& seq) const {
    return seq.blocks + static_cast<uint32_t>(seq.cached_blocks.size());
  }
  // Commits the whole prompt blocks `seq` has prefilled.
  void commit_prefilled(Seq& seq);
  uint64_t context_tokens() const;
  uint32_t decoding() const;
  void update_held(Worker& worker) const;
  void drop_front(Worker& worker, DropReason reason);
  // tessera's SLO-aware admission (docs/llm.md#slo-aware-admission).
  DropReason check_on_entry(const Worker& worker, const Item& item, uint32_t prompt) const;
  bool misses_ttft_now(const Worker& worker, const Seq& seq) const;
  bool slows_decode(const Worker& worker, const Seq& seq) const;

  LlmSchedulerConfig config_;
  SchedulerHost& host_;
  const CostModel& cost_;
  KvBlockPool kv_;
  std::deque<Seq> waiting_;      // preempted requests first, then arrivals in order
  std::vector<Seq> running_;     // admitted, in admission order
  uint64_t waiting_tokens_ = 0;  // prompt tokens in waiting_
  uint64_t preemptions_ = 0;
  uint64_t prefix_queries_ = 0;
  uint64_t prefix_hits_ = 0;
  uint64_t reported_queries_ = 0;  // up to the last step's LlmStepStats
  uint64_t reported_hits_ = 0;
  uint64_t next_serial_ = 1;  // for synthetic prompt ids
  PromptIds prompt_ids_;
  std::function<void(RequestSlot, uint64_t)> on_commit_;
  std::vector<uint64_t> hits_;     // scratch
  double finished_outputs_ = 0.0;  // for the mean-output predictor
  double finished_count_ = 0.0;
  // The step being planned, for the admission-time TTFT check: prompt tokens already in it
  // (continuous) and the token budget it has left (chunked).
  uint32_t step_prefill_planned_ = 0;
  uint32_t step_budget_left_ = 0;
  std::vector<StepPart> parts_;  // the running step's requests, for the cost model
};

}  // namespace tessera
