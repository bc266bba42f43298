#pragma once

// The shape of a PPipe plan (PPipe, USENIX ATC '25, §5 and Appendix A.2): what the PPipe
// planner (src/plan/ppipe/) produces and what the reservation data plane and the
// simulator consume. Plain values: a PpipePlan owns everything it holds, copies freely, and is
// safe to read from several threads once built. Blocks, cuts and latencies refer to the
// block profiles of src/profile/ppipe_import.hpp.
//
// Units: milliseconds for latencies, requests per second for throughputs, bytes per sample
// (fp16) for cut tensors, Gbit/s for NIC bandwidth.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/planner.hpp"

namespace tessera::ppipe {

// One GPU class of the cluster (Table 1 of the paper): `count` physical GPUs, packed
// `gpus_per_server` to a server whose NIC has `nic_gbps` nominal bandwidth in each
// direction. A GPU can be shared by up to `max_mps` MPS processes (vGPU = 1/v GPU,
// v = 1..max_mps).
struct GpuClass {
  std::string name;  // as in the profiles: L4, T4, V100, P4
  int count = 0;
  int gpus_per_server = 1;
  double nic_gbps = 0.0;
  int max_mps = 1;
};

struct PpipeCluster {
  std::vector<GpuClass> classes;
  // Effective bandwidth = nominal x this fraction (§7.1: one fifth).
  double bandwidth_fraction = 0.2;

  // The index of the class named `name` in `classes`, or -1.
  int class_index(std::string_view name) const {
    for (size_t k = 0; k < classes.size(); ++k) {
      if (classes[k].name == name) return static_cast<int>(k);
    }
    return -1;
  }
};

// One partition of a pipeline: blocks [first_block, end_block) of the DNN on a pool of
// `vgpus` vGPUs of class `gpu_class`, each 1/`mps` of a GPU.
struct Partition {
  int first_block = 0;
  int end_block = 0;  // exclusive
  std::string gpu_class;
  int mps = 1;
  int vgpus = 0;
  double infer_ms = 0.0;             // latency of the blocks at the pipeline's batch size
  double transfer_in_ms = 0.0;       // the incoming cut at the batch size (0 for the first)
  double in_bytes_per_sample = 0.0;  // fp16 bytes per sample of the incoming cut (0 first)
  double throughput = 0.0;           // of the pool: vgpus x per-vGPU throughput (with NIC cap)
};

// A pooled pipeline: its partitions in order, one batch size for all of them (the
// paper's batch-size unification).
struct Pipeline {
  int batch = 1;
  std::vector<Partition> partitions;
  double latency_ms = 0.0;  // sum of inference and transfer latencies at `batch`
  double throughput = 0.0;  // min over partitions
};

struct DnnPlan {
  std::string dnn;      // the model name of its block profiles
  double weight = 1.0;  // workload share (the multi-DNN objective max min x_m / w_m)
  double slo_ms = 0.0;  // the full SLO (deadline = arrival + slo_ms)
  std::vector<Pipeline> pipelines;
  double throughput = 0.0;  // sum over pipelines
};

// How the solve ended, for the plan's report.
struct PpipeSolveStats {
  plan::PlanStatus status = plan::PlanStatus::kNoSolution;
  std::string limit;  // kFeasible: what stopped the search ("time limit", "node limit")
  double seconds = 0.0;
  double gap = 0.0;   // proven relative gap (0 = optimal)
  int templates = 0;  // pipeline templates considered
  // Added by the planner (issue 12): the incumbent's objective and CBC's bound (req/s; for
  // several DNNs the objective is min_m x_m / w_m), the pipeline configurations the MILP
  // chose among after dominance pruning, and a sentence on what bound or failed.
  double objective = 0.0;
  double bound = 0.0;
  int configurations = 0;
  std::string detail;
  long nodes = 0;  // branch-and-bound nodes (not in plan.json)
  // The warm start's objective (0: none) and the seconds it took (not in plan.json).
  double warm_start = 0.0;
  double warm_start_seconds = 0.0;
  // The surrogate decomposition bound (plan/ppipe/decomp.hpp; 0: not run), its per-DNN
  // MILPs and CPU seconds (not in plan.json).
  double decomposition_bound = 0.0;
  int decomposition_calls = 0;
  double decomposition_seconds = 0.0;
  // The decomposition's primal side: the objective of the best plan combined from per-DNN
  // plans (0: none); when it beats CBC's incumbent it is the plan (not in plan.json).
  double decomposition_plan = 0.0;
};

// plan.json's "status": "optimal", "feasible (time limit)", "infeasible", "no solution
// (limit)".
std::string status_text(const PpipeSolveStats& solve);

// Who planned it: PPipe's MILP, or one of its baselines (§7.1).
enum class PpipeMethod {
  kPpipe,  // "ppipe"
  kNp,     // "np": no partitioning
  kDartR,  // "dart-r": DART-r's pipelines
};
const char* method_name(PpipeMethod method);
// "ppipe", "np", "dart-r"; std::nullopt for another name.
std::optional<PpipeMethod> method_from_name(std::string_view name);

struct PpipePlan {
  PpipeMethod method = PpipeMethod::kPpipe;
  PpipeCluster cluster;
  double slo_margin = 0.4;  // fraction of the SLO the planner kept aside
  std::vector<DnnPlan> dnns;
  PpipeSolveStats solve;
};

}  // namespace tessera::ppipe
