#include "control/replan_decider.hpp"

namespace tessera::control {

ReplanDecider::ReplanDecider(const plan::PlanInput& input, const plan::PlanOptions& options,
                             const ControllerOptions& c)
    : input_(input), cache_(input, options, c.demand_step, c.planner), predictor_(c.history_bins) {}

const plan::JigsawPlan* ReplanDecider::initial(double rps, BinRecord& rec, std::string& why) {
  rec.predicted_rps = rps;
  const plan::JigsawPlan* p = choose(rps, rec);
  if (p == nullptr) {
    const plan::MaxDemand& max = cache_.max_demand();
    why = "no plan of this search space serves any demand";
    if (!max.message.empty()) why += ": " + max.message;
    return nullptr;
  }
  current_ = p;
  return p;
}

const plan::JigsawPlan* ReplanDecider::tick(double last_rps, BinRecord& rec) {
  predictor_.observe(last_rps);
  rec.predicted_rps = predictor_.predict();
  const plan::JigsawPlan* p = choose(rec.predicted_rps, rec);
  rec.has_plan = p != nullptr;
  if (p == nullptr) {  // keep serving with what runs
    if (current_ != nullptr) fill_plan_facts(*current_, rec);
    return nullptr;
  }
  if (p == current_) return nullptr;
  current_ = p;
  return p;
}

void ReplanDecider::fill_plan_facts(const plan::JigsawPlan& p, BinRecord& rec) const {
  rec.slices = p.evaluation.slices;
  rec.planned_accuracy = p.evaluation.accuracy;
  rec.workers = plan::to_deployment(p, input_).total_workers();
}

const plan::JigsawPlan* ReplanDecider::choose(double rps, BinRecord& rec) {
  const PlanCache::Lookup look = cache_.plan_for(rps);
  rec.planned_rps = look.grid_demand_rps;
  rec.fallback = look.fallback;
  rec.solve_seconds = look.solve_seconds;
  rec.solve_limited = look.limited;
  if (look.plan != nullptr) fill_plan_facts(*look.plan, rec);
  return look.plan;
}

}  // namespace tessera::control
