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
// DownstreamEstimate::kBackward this is Nexus's reactive rule; with kServiceOnly, DREAM's.
class RequestBroker final : public PlannerFedDropping {
 public:
  using PlannerFedDropping::PlannerFedDropping;

  // Eq. 3b's estimate of when the item would leave the pipeline.
  Time estimated_finish(const Item& item, const DropContext& ctx) const;

 private:
  DropReason decide(const Item& item, const DropContext& ctx) override;
};

}  // namespace tessera
