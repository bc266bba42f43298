#pragma once

// The planner seam: one interface every planner implements (JigsawServe's MILP in
// plan/jigsawserve, PPipe's MILP and its NP and DART-r baselines in plan/ppipe, iServe's
// intent-driven controller in plan/iserve). A planner takes its typed request and returns
// what the engine runs (the engine's `App` and `Deployment`, one per application it
// planned for) beside its own report, shaped as its paper reports a plan (JigsawServe's
// Eq. 14 plan and its check against the nonlinear model, PPipe's pooled pipelines,
// iServe's ranked configuration and its placement). `tessera plan` dispatches on the plan
// spec's declared `planner:` field (declared_planner). Plain values and pure interfaces;
// a planner holds no state between calls, so one object may plan from several threads.

#include <string>
#include <string_view>
#include <vector>

#include "engine/app.hpp"
#include "engine/deployment.hpp"

namespace tessera {
class SpecNode;
}

namespace tessera::plan {

// The planners, as a plan spec's `planner:` field names them.
enum class PlannerKind { kJigsawServe, kPpipe, kIServe };
std::string_view planner_name(PlannerKind kind);  // "jigsawserve", "ppipe", "iserve"

// The plan spec's declared planner. A spec without `planner:` is planned by JigsawServe
// (the only planner whose specs predate the field) and `inferred` is set, for the caller
// to say so; an unknown name is a SpecError naming the field and the choices.
PlannerKind declared_planner(const SpecNode& spec, bool* inferred = nullptr);

// How a planner's solve ended.
enum class PlanStatus {
  kOptimal,     // proven optimal (within the solver's gap)
  kFeasible,    // a limit stopped the search; the plan is valid but maybe not optimal
  kInfeasible,  // no plan meets the constraints; the message names the binding one
  kNoSolution,  // a limit stopped the search before any plan was found
};
// "optimal", "feasible (solver limit)", "infeasible", "no solution (solver limit)".
const char* to_string(PlanStatus status);
inline bool has_plan(PlanStatus s) {
  return s == PlanStatus::kOptimal || s == PlanStatus::kFeasible;
}

// What the engine runs for one application of a plan.
struct PlannedDeployment {
  std::string name;  // the application: JigsawServe's app, one of PPipe's DNNs, an LLM
  App app;
  Deployment deployment;
};

// A planner's answer: its status, what the engine runs, and its own report.
template <typename Report>
struct PlanResult {
  PlanStatus status = PlanStatus::kNoSolution;
  std::string message;                         // why infeasible or no solution; empty otherwise
  std::vector<PlannedDeployment> deployments;  // empty without a plan
  Report report;
};

// Every planner: a typed request in, the engine's deployments and the planner's report
// out. Never throws for a request it cannot satisfy (the result says so); throws
// std::invalid_argument for a malformed request.
template <typename Request, typename Report>
class Planner {
 public:
  using RequestType = Request;
  using ReportType = Report;
  virtual ~Planner() = default;
  virtual PlannerKind kind() const = 0;
  virtual PlanResult<Report> plan(const Request& request) const = 0;
};

}  // namespace tessera::plan
