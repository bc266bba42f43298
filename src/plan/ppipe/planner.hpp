#pragma once

// The PPipe planner (docs/plan.md#ppipe-planner): the MILP of PPipe's Appendix A.2 over
// CBC, and the paper's two baselines solved with the same model (§7.1, digest §5.4):
//   plan_ppipe   pooled pipelines, up to max_partitions partitions, MPS vGPUs, unified batch;
//   plan_np      NP: one partition, whole GPUs (no MPS), with the batch-build estimate as
//                the paper's NP (the authors' get_baseline_plan): its largest batch meets
//                the budget with 1.3 (b - 1) / x_NP added;
//   plan_dart_r  DART-r: the 1+1 MILP (one GPU of each of the two classes, no MPS) replicated
//                over pairs, leftovers of the larger class running the whole DNN alone; GPUs
//                split among the DNNs as the NP plan splits them, unallocated ones evenly.
// Every plan is re-checked outside the solver (check_ppipe_plan); the result carries what
// the check found. Not thread-safe (CBC keeps static state): one solve at a time.

#include <string>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"
#include "plan/planner.hpp"
#include "plan/ppipe/problem.hpp"

namespace tessera::plan {

struct PpipeResult {
  ppipe::PpipePlan plan;
  std::vector<ConfigRules> rules;     // per DNN: how its configurations were built
  std::vector<std::string> problems;  // what check_ppipe_plan found (empty: the plan holds)
  bool ok() const { return problems.empty(); }
};

// The batch-build estimate 1.3 (b - 1) / x_NP (options.batch_build_estimate, on by default)
// is part of every method's latency rule, PPipe's, NP's and DART-r's alike, with x_NP the
// throughput of NP planned *without* the estimate (np_estimate_throughputs; the authors'
// est_xput), solved first within the method's time limit. `np` is not needed for it and is
// ignored by plan_ppipe (kept for callers that pass it); plan_dart_r splits the GPUs as
// `np` (NP's plan of the same input; null: it plans NP first).
PpipeResult plan_ppipe(const PpipeInput& in, const ppipe::PpipePlan* np = nullptr);
PpipeResult plan_np(const PpipeInput& in);
PpipeResult plan_dart_r(const PpipeInput& in, const ppipe::PpipePlan* np = nullptr);

// Per DNN, NP's planned throughput without the batch-build estimate: the x_NP of the
// estimate (all 0 when options.batch_build_estimate is off).
std::vector<double> np_estimate_throughputs(const PpipeInput& in);

// The per-DNN rules PPipe uses: budget slo x (1 - margin) and the batch-build estimate with
// x_NP = `x_np` (np_estimate_throughputs).
std::vector<ConfigRules> ppipe_rules(const PpipeInput& in, const std::vector<double>& x_np);

// Re-derives every number of `plan` from the profiles and the cluster and lists what does
// not hold: latencies, per-partition and pipeline throughputs, block ranges, batch sizes
// per vGPU size, MPS levels, one configuration per template, and the GPU budget with whole
// physical GPUs per (DNN, class, position) when the options ask for it.
std::vector<std::string> check_ppipe_plan(const ppipe::PpipePlan& plan, const PpipeInput& in,
                                          const std::vector<ConfigRules>& rules);

// What PPipe's planner is asked: the problem, who plans it (PPipe's MILP or a baseline), and
// NP's plan when the caller has it (DART-r starts from it; null: DART-r plans NP first).
struct PpipeRequest {
  const PpipeInput& input;
  ppipe::PpipeMethod method = ppipe::PpipeMethod::kPpipe;
  const ppipe::PpipePlan* np = nullptr;
};

// plan_ppipe, plan_np and plan_dart_r behind the seam: the report is the PpipeResult (the
// pooled pipelines of plan.json, the rules, the re-check); the deployments, one per DNN
// with a pipeline, what the engine runs for it under PPipe's data planes (build_setup:
// partitions as tasks on vGPU segments, servers' NICs as links).
class PpipePlanner final : public Planner<PpipeRequest, PpipeResult> {
 public:
  PlannerKind kind() const override { return PlannerKind::kPpipe; }
  PlanResult<PpipeResult> plan(const PpipeRequest& request) const override;
};

}  // namespace tessera::plan
