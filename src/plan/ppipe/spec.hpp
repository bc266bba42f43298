#pragma once

// The PPipe plan spec (docs/specs.md#ppipe-plan-spec): a plan spec whose `planner` is
// `ppipe`. It names PPipe's profile folder, the cluster (one of the paper's HC1-HC4 or GPU
// classes written out), the DNNs (one of the paper's groups G1-G6 or a list with weights
// and SLOs), the SLO rule and margin, the MILP's options and which methods to plan (ppipe,
// np, dart-r). Parsing loads every DNN's block profiles and resolves each SLO; every error
// is a SpecError naming the file, the field and the problem. Also the paper's clusters and
// groups, for benchmarks and tests. Pure functions; safe to call from several threads.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/spec_node.hpp"
#include "dataplane/ppipe/ppipe_plan.hpp"
#include "plan/ppipe/problem.hpp"

namespace tessera::plan {

struct PpipeSpec {
  std::filesystem::path file;
  std::filesystem::path profiles_dir;  // PPipe's data/ layout: models/block-timing-tf32, ...
  std::string cluster_name;            // HC1..HC4, or "custom"
  std::string group_name;              // G1..G6, or "custom"
  PpipeInput input;
  std::vector<ppipe::PpipeMethod> methods = {ppipe::PpipeMethod::kPpipe, ppipe::PpipeMethod::kNp,
                                             ppipe::PpipeMethod::kDartR};
};

PpipeSpec parse_ppipe_plan_spec(const SpecNode& node);
PpipeSpec load_ppipe_plan_spec(const std::filesystem::path& file);

// The paper's Table 1 clusters with `high` high-class and `low` low-class GPUs (the
// simulator's defaults: 25 and 75). NICs: P4 servers 32 Gbit/s, T4 servers 50 Gbit/s (the
// digest's reading of the swapped Table 1 column, matching the repo's 6 and 10 Gbit/s
// effective); GPUs per server as the repo's plans: L4-P4 1/1, L4-T4 4/2, V100-P4 2/1,
// V100-T4 4/2; MPS up to 4 except on P4. Throws std::invalid_argument for another name.
ppipe::PpipeCluster paper_cluster(const std::string& name, int high = 25, int low = 75);
// The paper's groups G1..G6 (the repo's seed-17 shuffle): model names of PPipe's profiles,
// with the MAF-2019 weights 0.30, 0.33, 0.37.
std::vector<std::pair<std::string, double>> paper_group(const std::string& name);

// Loads `models` (with weights) from `profiles_dir` and resolves SLOs as slo_scale x the
// whole-model bs-1 latency on `slo_reference_gpu` (empty: the fastest profiled GPU).
std::vector<PpipeDnn> load_ppipe_dnns(const std::filesystem::path& profiles_dir,
                                      const std::vector<std::pair<std::string, double>>& models,
                                      double slo_scale = 5.0,
                                      const std::string& slo_reference_gpu = "");

}  // namespace tessera::plan
