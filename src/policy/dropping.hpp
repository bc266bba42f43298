#pragma once

#include <algorithm>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/policies.hpp"
#include "engine/worker.hpp"

namespace tessera {

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

// Drops what can no longer meet its deadline as soon as that is known (`infeasible`, a
// stronger reading than the papers' for SuperServe's router, issue 11):
// - queued: an item still waiting once even the worker's fastest variant at batch 1,
//   started now, would end at or after its deadline (purged from the queue's front:
//   exact for an earliest-deadline-first queue, whose front has the earliest deadline);
// - joining a batch: an item whose deadline has passed at the batch's start (kExpired) or
//   that the batch, at its profiled latency, would finish late (kPredictedLate).
class DropInfeasible final : public DropPolicy {
 public:
  DropReason on_batch(const Item& item, const DropContext& ctx) override {
    if (ctx.batch_start >= item.deadline) return DropReason::kExpired;
    if (ctx.batch_start + ctx.exec_time > item.deadline) return DropReason::kPredictedLate;
    return DropReason::kNone;
  }
  Time stale_at(const Item& item, const Worker& worker) const override {
    Time fastest = worker.profiled_latency(0, 1);
    for (std::size_t slot = 1; slot < worker.variants.size(); ++slot) {
      fastest = std::min(fastest, worker.profiled_latency(static_cast<int>(slot), 1));
    }
    return item.deadline - fastest;
  }
  bool purges_stale() const override { return true; }
  DropReason stale_reason() const override { return DropReason::kPredictedLate; }
};

}  // namespace tessera
