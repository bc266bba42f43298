#pragma once

// The PPipe planning problem (PPipe, USENIX ATC '25, Appendix A.2; docs/plan.md#ppipe-planner)
// and its pipeline configurations. A PpipeInput owns copies of the block profiles of every
// DNN and the cluster; PipeConfig is one fully specified pooled pipeline of one DNN (a
// template = GPU class per partition position, its cut points, each partition's vGPU size
// and one unified batch size) with everything the MILP needs precomputed: the latency it
// adds up to and each partition's per-vGPU throughput including the per-vGPU NIC cap.
// Plain values, no shared state; enumerate_configs() is a pure function, safe to call
// from several threads.

#include <array>
#include <map>
#include <string>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"
#include "plan/milp/milp.hpp"
#include "profile/ppipe_import.hpp"

namespace tessera::plan {

struct PpipeDnn {
  std::string name;     // the model name of its block profiles
  double weight = 1.0;  // workload share, for max min_m x_m / w_m
  double slo_ms = 0.0;  // the full SLO (resolved: given, or slo_scale x fastest bs-1 latency)
  // Every (GPU, MPS share) profile of the model that was loaded (load_ppipe_model()).
  std::vector<PpipeBlockProfile> profiles;

  int num_blocks() const;
  // The profile of `gpu` at `share`, or nullptr.
  const PpipeBlockProfile* profile(const std::string& gpu, int share) const;
  // The whole model's measured latency at batch 1 on a whole GPU (ms), per GPU: the mean
  // TensorRT compute time of the model built as one engine (the paper's SLO basis; PPipe's
  // data/models/model-profile-tf32, kept as models/whole-model-latency.csv). Empty when the
  // profiles folder has none.
  std::map<std::string, double> whole_model_bs1_ms;

  // The whole model's batch-1 latency on `gpu` (ms): the measured whole-model engine when
  // known, else the sum of the block profiles; -1 without a whole-GPU profile of `gpu`.
  double bs1_ms(const std::string& gpu) const;
  // That latency's minimum over the GPUs (ms), and that GPU's name.
  double fastest_bs1_ms(std::string* gpu = nullptr) const;
};

struct PpipeOptions {
  int max_partitions = 2;   // 1..3 (the repo's main runs: 2; its ablation: 3)
  double slo_margin = 0.4;  // fraction of the SLO kept aside by the planner
  // Largest batch size per vGPU size v = 1..4 (digest §2.2 [R]: 8, 4, 2, 2).
  std::array<int, 4> max_batch_by_share = {8, 4, 2, 2};
  // The repo's batch-build latency estimate 1.3 (b - 1) / x_NP added to each pipeline's
  // latency, for every method (NP and DART-r too, as the authors' baselines), x_NP being
  // the DNN's throughput in NP planned without the estimate (infinite when NP serves none,
  // so only b = 1 remains). Off: no estimate.
  bool batch_build_estimate = true;
  // The paper's reading: each template (a sequence of GPU classes) holds at most one
  // configuration (cut points, vGPU sizes, batch). Off: the named variant "ppipe-pooled",
  // any number of configurations per template.
  bool one_config_per_template = true;
  // The named variant "repo templates": the repo's |K|^max_partitions templates, each a
  // sequence of exactly max_partitions classes whose trailing partitions may be skipped
  // (so [L4, P4] holds the pipelines [L4] and [L4, P4]), one configuration per template.
  // Off (the paper's reading): the distinct sequences of 1..max_partitions classes.
  bool repo_templates = false;
  // The repo's force_sum_gpu_integer_per_partition: whole physical GPUs per (DNN, class,
  // partition position), so the vGPUs sharing a GPU run the same position.
  bool integer_gpus_per_position = true;
  // Solver aids that keep the optimum (docs/plan.md#ppipe-planner, "Tightened formulation"):
  // the LP relaxation's optimum (re-solved tighten_rounds times) caps every configuration's
  // throughput and vGPU counts, a binary per configuration with g <= gmax u, and a whole GPU
  // at each position a used configuration occupies. Off: the plain A.2 model.
  bool tighten_formulation = true;
  int tighten_rounds = 3;
  bool binary_per_configuration = true;  // with tighten: a u even for lone configurations
  // Branch first on each DNN's whole GPUs per class, then per position, then on the
  // configuration binaries, then on vGPU counts (CBC priorities; the model is unchanged).
  // Off by default: on types3/G1 it left CBC's bound higher after 30 s (docs/benchmarks.md).
  bool branch_priorities = false;
  // Warm start: before the full solve, the MILP restricted to the configurations the LP
  // relaxation uses, for this share of the time limit; its plan is CBC's first incumbent.
  // 0: off.
  double warm_start_share = 0.2;
  // The surrogate decomposition bound (several DNNs; plan/ppipe/decomp.hpp): after the warm
  // start, per-DNN min-cost MILPs at targets t prove an upper bound on min_m x_m / w_m that
  // keeps each DNN's integrality, for up to this share of the time limit; the full model's z
  // is capped by it. surrogate_call_s: CPU seconds per per-DNN MILP.
  bool decomposition_bound = true;
  double decomposition_share = 0.45;
  // ... with decomposition_many_classes or more GPU classes (there CBC's first phase does not
  // prove the gap on the bench's instances, and the column pool's pricing, which runs only
  // there, needs the time; docs/benchmarks.md).
  double decomposition_share_many_classes = 0.7;
  int decomposition_many_classes = 4;
  double surrogate_call_s = 2.0;
  // The primal side: a capped repair's relative gap (it needs a plan within the caps, not
  // the cheapest), and the column pool's MILP after every tested target (the full model
  // restricted to the configurations the per-DNN plans used so far).
  double surrogate_repair_gap = 0.05;
  bool decomposition_pool = true;
  // After each pool solve, per-DNN plans priced by the pool LP's budget duals join the pool
  // (price-and-branch), and the pool is solved again (with decomposition_many_classes or
  // more classes only).
  bool decomposition_pool_pricing = true;
  // Run the decomposition even when CBC's first phase already proved the gap (tests,
  // experiments), and print each target it tests to stderr.
  bool decomposition_always = false;
  bool decomposition_trace = false;
  MilpOptions milp = default_milp();

  static MilpOptions default_milp() {
    MilpOptions m;
    m.time_limit_s = 30.0;
    m.relative_gap = 0.01;
    m.absolute_gap = 1e-6;
    // Cutting planes barely move this model's bound (the gap is integer rounding of GPU
    // counts) and slow every node: off, the proofs finish about twice as fast.
    m.cbc_args = {"-cutsOnOff", "off"};
    // With the tightened formulation, CBC's integer preprocessing stalled the bound on
    // HC2/G1 (no progress in 10,000 nodes); without it all 24 paper instances prove 1 %.
    m.preprocess = false;
    // Wall-clock seconds: `time_limit_s` is when the plan is back, loaded machine or not
    // (each method's solve, NP's inside PPipe's and DART-r's included, ends by then: see
    // with_deadline() in milp_solve.hpp). CPU seconds (true) stop at about the same node
    // on any load but took 6-10x the limit in wall time on a busy 2-core machine.
    m.cpu_time_limit = false;
    return m;
  }
};

struct PpipeInput {
  ppipe::PpipeCluster cluster;
  std::vector<PpipeDnn> dnns;
  PpipeOptions options;
};

// One partition of a configuration.
struct PartConfig {
  int first = 0, end = 0;  // blocks [first, end)
  int cls = 0;             // index into the cluster's classes
  int mps = 1;             // vGPU = 1/mps GPU
  double infer_ms = 0.0;
  double transfer_in_ms = 0.0;  // batch x bytes / bandwidth of the incoming cut
  double in_bytes = 0.0;        // fp16 bytes per sample of the incoming cut
  double x_vgpu = 0.0;          // per-vGPU throughput (req/s), NIC cap included
};

struct PipeConfig {
  int tmpl = 0;  // index into the templates of enumerate_templates()
  int batch = 1;
  double latency_ms = 0.0;  // inference + transfer + batch-build estimate
  std::vector<PartConfig> parts;
};

// Every sequence of class indices of length 1..max_partitions (the paper's distinct pooled
// pipelines: 2 classes and 3 partitions give 2 + 4 + 8 = 14).
std::vector<std::vector<int>> enumerate_templates(int num_classes, int max_partitions);

// The repo's templates (see PpipeOptions::repo_templates): every sequence of exactly
// max_partitions classes.
std::vector<std::vector<int>> enumerate_repo_templates(int num_classes, int max_partitions);

// How one DNN's configurations are built: the latency budget slo x (1 - margin), the
// batch-build estimate (0 when off), and whether MPS levels above 1 are allowed.
struct ConfigRules {
  double budget_ms = 0.0;
  double np_throughput = 0.0;  // x_NP for the batch-build estimate; <= 0: only b = 1
  bool batch_build = false;
  bool allow_mps = true;
  bool prune_dominated = true;
};

// The batch-build estimate of a batch of b (ms).
double batch_build_ms(const ConfigRules& rules, int batch);

// Per-sample transfer time (ms) of `bytes` from class a to class b: the slower NIC's
// effective bandwidth (nominal x the cluster's bandwidth fraction).
double transfer_ms_per_sample(const ppipe::PpipeCluster& cluster, int from_cls, int to_cls,
                              double bytes);

// The configurations of `dnn` whose latency fits the budget, for every template. With
// prune_dominated, a configuration is dropped when another of the same template does at
// least as well at every position with a vGPU size its size divides (so any vGPU count of
// the dropped one can be matched with no more physical GPUs): the MILP's optimum is kept.
// `why_none`, when given, is set to the tightest failing constraint if nothing fits.
std::vector<PipeConfig> enumerate_configs(const ppipe::PpipeCluster& cluster, const PpipeDnn& dnn,
                                          const std::vector<std::vector<int>>& templates,
                                          const PpipeOptions& options, const ConfigRules& rules,
                                          std::string* why_none = nullptr);

}  // namespace tessera::plan
