#pragma once

// PPipe's MILP (Appendix A.2 over enumerated configurations; docs/plan.md#ppipe-planner),
// solved in named stages (milp_solve.cpp): configurations, throughput bound, model build,
// LP tightening, warm start, CBC, the surrogate decomposition, extraction. Internal to
// plan/ppipe: plan_ppipe, plan_np and plan_dart_r (planner.hpp) call it. Pure function of
// its arguments (CBC's time limits aside); safe from several threads.

#include <string>
#include <utility>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"
#include "plan/ppipe/problem.hpp"

namespace tessera::plan {

struct Solved {
  ppipe::PpipePlan plan;
  bool feasible = false;
  // Min-cost mode (one DNN): CBC's lower bound on the least cost (+inf: no plan reaches the
  // target) and the found plan's physical GPUs per class (empty: none found).
  double cost_lower = 0.0;
  std::vector<int> gpus;
  double zcap = 0.0;  // the LP-optimum cap the tightening found (+inf: none)
  // Min-cost mode: the solution's values by variable name (a start for the full model).
  std::vector<std::pair<std::string, double>> values;
  // Min-cost mode: the configurations the solution uses (x > 0), numbered as in the whole
  // cluster's model of the same DNN.
  std::vector<int> used_configs;
};

// What solve_milp is asked. Default: the A.2 objective. With target > 0 (one DNN): the
// decomposition's question, the least price-weighted physical GPUs of a plan serving >= target.
struct MilpMode {
  double target = 0.0;
  std::vector<double> prices;  // per class
  double zcap = 0.0;           // > 0: the tightening's cap from an earlier call (skips its LPs)
  double limit_s = 0.0;        // > 0: CBC's limit for the min-cost MILP (else surrogate_call_s)
  // Non-empty: each class's budget row is capped here instead of at its count (the
  // configurations stay those of the whole cluster, numbered alike).
  std::vector<int> caps;
  double gap = 0.0;  // > 0: CBC's relative gap for the min-cost MILP (else 1e-4)
};

// `opt` with its wall-clock deadline set: now + milp.time_limit_s when the limit counts
// wall-clock seconds and no deadline is set yet (unchanged otherwise). Every CBC call of a
// solve (and of the solves it makes: NP for the batch-build estimate, DART-r's pairs, the
// decomposition's per-DNN MILPs) is cut at that deadline.
PpipeOptions with_deadline(const PpipeOptions& opt);

// The MILP of Appendix A.2 over enumerated configurations (see docs/plan.md#ppipe-planner):
// per configuration c of DNN m a throughput x_c, integer vGPU counts g_cd with
// x_c <= X_cd g_cd, a binary u_c (one configuration per template) with x_c <= Xmax_c u_c
// and g_cd >= u_c; physical GPUs sum g_cd / v_cd <= y_mkd integer per (DNN, class,
// position) and sum y <= N_k; objective max sum x (one DNN) or max z, w_m z <= sum_c x_c.
Solved solve_milp(const ppipe::PpipeCluster& cluster, const std::vector<PpipeDnn>& dnns,
                  const std::vector<ConfigRules>& rules, const PpipeOptions& opt,
                  int max_partitions, ppipe::PpipeMethod method, const MilpMode& mode = {});

}  // namespace tessera::plan
