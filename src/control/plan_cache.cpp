#include "control/plan_cache.hpp"

#include <spdlog/spdlog.h>

#include <cmath>

namespace tessera::control {

PlanCache::PlanCache(const plan::PlanInput& input, const plan::PlanOptions& options, double step,
                     Planner planner)
    : input_(input), options_(options), step_(step), planner_(std::move(planner)) {}

double PlanCache::grid_point(double demand_rps) const {
  if (step_ <= 0.0) return demand_rps;
  const double index = std::ceil(std::log(demand_rps) / std::log1p(step_) - 1e-9);
  return std::exp(index * std::log1p(step_));
}

const plan::MaxDemand& PlanCache::max_demand() {
  if (!max_) {
    spdlog::info("{}: solving for the largest serviceable demand (fallback plan)",
                 options_.space.name());
    max_ = plan::max_serviceable_demand(input_, options_);
    ++solves_;
    if (!max_->limit.empty() || max_->plan.stats.limit != plan::MilpLimit::kNone) {
      ++limited_solves_;
      spdlog::warn("{}: the max-demand search was cut short ({}): its plan may not be optimal",
                   options_.space.name(),
                   max_->limit.empty() ? plan::to_string(max_->plan.stats.limit) : max_->limit);
    }
  }
  return *max_;
}

PlanCache::Lookup PlanCache::plan_for(double demand_rps) {
  Lookup out;
  demand_rps = std::max(demand_rps, 1e-3);
  const double grid = grid_point(demand_rps);
  const long key =
      step_ > 0.0 ? std::lround(std::log(grid) / std::log1p(step_)) : std::lround(demand_rps * 1e6);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    plan::PlanInput in = input_;
    in.demand_rps = grid;
    plan::JigsawPlan p = planner_ ? planner_(in, options_) : plan::make_plan(in, options_);
    ++solves_;
    out.solved = true;
    out.solve_seconds = p.stats.seconds;
    if (p.stats.limit != plan::MilpLimit::kNone) {
      ++limited_solves_;
      spdlog::warn("{}: the plan for {:.1f} req/s was cut short by the {}: it may not be optimal",
                   options_.space.name(), grid, plan::to_string(p.stats.limit));
    }
    it = plans_.emplace(key, std::move(p)).first;
  }
  out.grid_demand_rps = grid;
  if (it->second.has_plan()) {
    out.plan = &it->second;
    out.limited = it->second.stats.limit != plan::MilpLimit::kNone;
    return out;
  }
  const plan::MaxDemand& max = max_demand();
  if (!max.plan.has_plan()) return out;  // nothing is serviceable at all
  out.plan = &max.plan;
  out.limited = !max.limit.empty() || max.plan.stats.limit != plan::MilpLimit::kNone;
  out.fallback = true;
  out.grid_demand_rps = max.max_demand_rps;
  return out;
}

}  // namespace tessera::control
