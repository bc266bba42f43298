#include "control/live_replanner.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera::control {

std::string plan_summary(const BinRecord& rec) {
  if (!rec.has_plan) return "no serviceable plan: the running deployment stays";
  return fmt::format("planned {:.1f} req/s: {} slices, {} workers, accuracy {:.3f}{}",
                     rec.planned_rps, rec.slices, rec.workers, rec.planned_accuracy,
                     rec.fallback ? " (max-demand plan)" : "");
}

LiveReplanner::LiveReplanner(plan::PlanInput input, plan::PlanOptions options,
                             ControllerOptions controller)
    : input_(std::move(input)),
      options_(std::move(options)),
      controller_(controller),
      decider_(input_, options_, controller_) {
  if (controller_.bin <= 0) throw std::invalid_argument("the controller's bin must be positive");
}

LiveDecision LiveReplanner::close_window(uint64_t arrivals, double seconds) {
  LiveDecision d;
  d.window = ++windows_;
  d.arrivals = arrivals;
  d.seconds = seconds > 0 ? seconds : controller_.bin;
  d.measured_rps = static_cast<double>(arrivals) / d.seconds;
  d.record.bin = d.window;
  d.record.demand_rps = d.measured_rps;
  const plan::JigsawPlan* p = decider_.tick(d.measured_rps, d.record);
  if (p != nullptr) d.apply = plan::to_deployment(*p, input_);
  d.plan = plan_summary(d.record);
  return d;
}

}  // namespace tessera::control
