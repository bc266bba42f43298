#pragma once

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/worker.hpp"

namespace tessera {

class Engine;

// What a dropping policy knows at t_b, the moment an item would join a batch.
struct DropContext {
  Time now = 0.0;
  Time batch_start = 0.0;  // expected t_e: now for an idle worker, else the running batch's end
  Time exec_time = 0.0;    // profiled d_k of this worker at the batch size being formed
  const Worker* worker = nullptr;
  const Engine* engine = nullptr;  // for policies that read shared pipeline state
};

// Decides whether an item is dropped instead of joining a batch. Policies are called in
// every worker of every task; they never read a clock, only the context.
class DropPolicy {
 public:
  virtual ~DropPolicy() = default;
  // Called when the item reaches a worker's queue; dropping here costs no queue space.
  virtual DropReason on_enqueue(const Item&, const DropContext&) { return DropReason::kNone; }
  // Observations for policies that keep pipeline state (PARD's State Planner).
  virtual void on_arrival(const Item&, const Worker&, const Engine&, Time /*now*/) {}
  virtual void on_batch_start(const Worker&, int /*size*/, const Engine&, Time /*now*/) {}
  // Called when the item would join a batch.
  virtual DropReason on_batch(const Item& item, const DropContext& ctx) = 0;
};

// Never drops: late requests complete late.
class NoDropping final : public DropPolicy {
 public:
  DropReason on_batch(const Item&, const DropContext&) override { return DropReason::kNone; }
};

// Drops an item whose deadline has passed by the time its batch would start: running it
// could only produce a late result.
class DropExpired final : public DropPolicy {
 public:
  DropReason on_batch(const Item& item, const DropContext& ctx) override {
    return ctx.batch_start >= item.deadline ? DropReason::kExpired : DropReason::kNone;
  }
};

}  // namespace tessera
