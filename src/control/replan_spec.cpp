#include "control/replan_spec.hpp"

#include "core/input_file.hpp"
#include "policy/presets.hpp"

namespace tessera::control {
namespace {

ControllerOptions parse_controller(const SpecNode& node) {
  node.allow_only(
      {"bin_s", "history_bins", "reconfiguration_delay_s", "disruptive", "demand_step", "verify"});
  ControllerOptions c;
  if (auto n = node.get("bin_s")) c.bin = n->as_number_in(1.0, limits::kMaxSpanS);
  if (auto n = node.get("history_bins")) {
    c.history_bins = static_cast<int>(n->as_integer_in(1, 1000));
  }
  if (auto n = node.get("reconfiguration_delay_s")) {
    c.reconfiguration_delay = n->as_non_negative(limits::kMaxSpanS);
    if (c.reconfiguration_delay >= c.bin) n->fail("must be shorter than bin_s");
  }
  if (auto n = node.get("disruptive")) c.disruptive = n->as_bool();
  if (auto n = node.get("demand_step")) c.demand_step = n->as_number_in(0.0, 1.0);
  if (auto n = node.get("verify")) c.verify = n->as_bool();
  return c;
}

}  // namespace

ReplanSpec parse_replan_spec(const SpecNode& node) {
  node.allow_only({"plan", "workload", "spaces", "controller", "policies", "simulation"});
  ReplanSpec spec;
  spec.plan = plan::load_plan_spec(node.at("plan").as_file_path());
  spec.workload = node.at("workload");
  if (auto list = node.get("spaces")) {
    for (const SpecNode& s : list->items()) {
      try {
        spec.spaces.push_back(plan::parse_search_space(s.as_string()));
      } catch (const std::invalid_argument& e) {
        s.fail(e.what());
      }
    }
    if (spec.spaces.empty()) list->fail("needs at least one search space");
  } else {
    for (const char* name : {"A+S+T", "A+S", "A+T", "S+T"}) {
      spec.spaces.push_back(plan::parse_search_space(name));
    }
  }
  if (auto c = node.get("controller")) spec.controller = parse_controller(*c);
  spec.policies = preset_config("jigsawserve");
  if (auto p = node.get("policies")) {
    spec.policies = parse_policy_config(*p);
    check_policy_for_app(*p, spec.policies, spec.plan.input.app);
  }
  if (auto s = node.get("simulation")) {
    s->allow_only({"seed", "noise_cv"});
    if (auto n = s->get("seed"))
      spec.sim.seed = static_cast<uint64_t>(n->as_integer_in(0, INT64_MAX));
    if (auto n = s->get("noise_cv")) spec.sim.noise_cv = n->as_number_in(0.0, 10.0);
  }
  return spec;
}

ReplanSpec load_replan_spec(const std::filesystem::path& file) {
  LoadBudget budget;
  ReplanSpec spec = parse_replan_spec(SpecNode::load_file(file));
  spec.file = file;
  return spec;
}

}  // namespace tessera::control
