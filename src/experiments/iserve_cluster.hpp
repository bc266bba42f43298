#pragma once

// iServe's simulated cluster runs (§8, digest §4.5–4.6; docs/iserve.md#cluster-simulation):
// a cluster of identical GPUs; models deployed one after another (every
// `deploy_interval_s`); queries from an Azure LLM trace (thinned by `rate_scale`, prompts
// capped at `max_prompt_tokens`) each assigned uniformly at random (seeded) to one of the
// models deployed by its arrival; every query runs FCFS without batching on its
// endpoint's GPUs, which run one query at a time (co-located endpoints queue behind each
// other). Each run is a simulation on the engine (iserve_cluster_run.hpp); the trace is read
// by workload/'s Azure LLM reader. Systems: iServe with an intent and a placement policy
// (plan/iserve's IServePlanner); max-PP and max-TP without quantisation
// (TensorRT-LLM_PP/TP); an AlpaServe-like planner given the whole trace, with and without
// skipping models. Deterministic; single-threaded; the run owns its state.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "iserve/gpu_spec.hpp"
#include "llm_arch/config_map.hpp"
#include "llm_arch/llm_architecture.hpp"
#include "plan/iserve/controller.hpp"
#include "workload/arrival.hpp"

namespace tessera::iserve {

enum class SystemKind { kIServe, kMaxPp, kMaxTp, kAlpaServe };

struct SystemSpec {
  std::string name;
  SystemKind kind = SystemKind::kIServe;
  Intent intent;
  PlacementPolicy placement = PlacementPolicy::kHybrid;
  bool skip_models = true;  // AlpaServe may leave models out; AlpaServe* may not
  double theta = -1;        // hybrid's θ for this system; < 0: the spec's
};

struct ClusterModel {
  std::string label;  // e.g. "llama-2-70b#1"
  LlmArchitecture arch;
  std::vector<ConfigMapEntry> entries;  // this model's configuration map
};

struct ClusterSpec {
  GpuSpec gpu;
  int gpus = 8;
  std::vector<Arrival> trace;  // read_azure_llm_csv (workload/azure_llm.hpp)
  double rate_scale = 1.0;
  double duration_s = 3600;
  int max_prompt_tokens = 1024;
  double deploy_interval_s = 300;
  uint64_t seed = 1;
  std::vector<double> slo_scales{2.5, 5.0, 7.5};
  double alpaserve_slo_scale = 5.0;
  double theta = 0.5;
  std::vector<ClusterModel> models;
  std::vector<SystemSpec> systems;
};

// Reads a cluster run spec (YAML); paths are relative to it. Errors are SpecErrors naming
// the file and field.
ClusterSpec load_cluster_spec(const std::filesystem::path& file);

struct ModelOutcome {
  std::string label;
  std::string config;  // the configuration deployed, "-" when not deployed
  int replicas = 0;
  std::string gpus;    // e.g. "0,1|2,3" (stages separated by |)
  std::string layers;  // layers per stage, e.g. "10/9/7/6"
};

struct SystemOutcome {
  std::string name;
  std::vector<ModelOutcome> models;
  int models_deployed = 0;
  int gpus_used = 0;
  double memory_gb = 0;  // deployed, summed over replicas
  int64_t queries = 0;
  int64_t served = 0;
  double p50_s = 0, p95_s = 0, p99_s = 0;
  double mean_cost_gbs = 0;            // per served query: endpoint memory × latency
  double gpu_hours = 0;                // busy GPU time
  double throughput_per_gpu = 0;       // served queries per second per GPU used
  std::vector<double> slo_attainment;  // per slo scale, over every query (unserved = miss)
};

std::vector<SystemOutcome> run_cluster(const ClusterSpec& spec);

// The markdown tables of a run (deployments, then the metrics).
std::string cluster_report_markdown(const ClusterSpec& spec,
                                    const std::vector<SystemOutcome>& outcomes);

}  // namespace tessera::iserve
