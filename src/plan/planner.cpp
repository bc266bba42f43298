#include "plan/planner.hpp"

#include "core/spec_node.hpp"

namespace tessera::plan {

std::string_view planner_name(PlannerKind kind) {
  switch (kind) {
    case PlannerKind::kJigsawServe:
      return "jigsawserve";
    case PlannerKind::kPpipe:
      return "ppipe";
    case PlannerKind::kIServe:
      return "iserve";
  }
  return "?";
}

PlannerKind declared_planner(const SpecNode& spec, bool* inferred) {
  spec.expect_map();
  const auto field = spec.get("planner");
  if (inferred != nullptr) *inferred = !field;
  if (!field) return PlannerKind::kJigsawServe;
  const std::string name = field->as_choice({"jigsawserve", "ppipe", "iserve"});
  for (PlannerKind k : {PlannerKind::kJigsawServe, PlannerKind::kPpipe, PlannerKind::kIServe}) {
    if (planner_name(k) == name) return k;
  }
  return PlannerKind::kJigsawServe;  // not reached: as_choice accepted a listed name
}

const char* to_string(PlanStatus status) {
  switch (status) {
    case PlanStatus::kOptimal:
      return "optimal";
    case PlanStatus::kFeasible:
      return "feasible (solver limit)";
    case PlanStatus::kInfeasible:
      return "infeasible";
    case PlanStatus::kNoSolution:
      return "no solution (solver limit)";
  }
  return "?";
}

}  // namespace tessera::plan
