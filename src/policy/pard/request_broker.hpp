#pragma once

#include <memory>

#include "policy/pard/planner_fed_dropping.hpp"

namespace tessera {

// PARD's Request Broker (§4.2): at t_b, when an item would join a batch, estimate its
// end-to-end latency with Eq. 3b,
//     L = (t_e − t_s + d_k) + L_sub,
// and drop it if L exceeds its SLO (ties are kept). t_e is the expected start of the
// batch being formed, d_k the profiled time at that batch's size and L_sub the State
// Planner's downstream estimate (max over downstream paths). With
// DownstreamEstimate::kBackward this is PARD-back (and nexus-e2e); with kServiceOnly,
// DREAM's.
class RequestBroker final : public PlannerFedDropping {
 public:
  using PlannerFedDropping::PlannerFedDropping;

  // Eq. 3b's estimate of when the item would leave the pipeline.
  Time estimated_finish(const Item& item, const DropContext& ctx) const;

  // With PardSettings::purge_hopeless: the time from which a queued item cannot meet its
  // deadline even if it started at once, alone, on the task's fastest worker, and met no
  // queueing or batch wait downstream (deadline − min d_k(1) − the downstream floor).
  Time stale_at(const Item& item, const Worker& worker) const override;
  bool purges_stale() const override { return planner_->settings().purge_hopeless; }

 private:
  DropReason decide(const Item& item, const DropContext& ctx) override;
};

}  // namespace tessera
