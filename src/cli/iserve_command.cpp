// `tessera llm config-map | deploy | simulate-cluster`: iServe's GPU-scale side — the
// analytic configuration map, the controller's choice for an intent, and the simulated
// cluster runs (docs/iserve.md#gpu-model).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "iserve/analytic_model.hpp"
#include "iserve/cluster_sim.hpp"
#include "iserve/controller.hpp"
#include "llm_arch/config_map.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera::cli {
namespace {

using namespace tessera::iserve;  // NOLINT: the iServe types this file drives

std::filesystem::path model_config_path(const std::string& model) {
  std::filesystem::path p(model);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  return p;
}

struct MapOptions {
  std::string model;
  std::string gpu = "a6000";
  int gpus = 8;
  int prompt_tokens = 512;
  int kv_tokens = 2048;
  double output_tokens = 100;
  std::string out;
  std::string from;  // a config map file instead of the analytic model
  bool ranges = false;
  // deploy
  std::string intent = "cost";
  double target = 0;
  std::string placement = "hybrid";
};

ConfigMap build_map(const MapOptions& o, GpuSpec& gpu) {
  gpu = gpu_spec(o.gpu);
  if (!o.from.empty()) return load_config_map(o.from);
  AnalyticOptions a;
  a.prompt_tokens = o.prompt_tokens;
  a.kv_tokens = o.kv_tokens;
  a.decode_context = o.prompt_tokens + static_cast<int>(o.output_tokens / 2);
  return analytic_config_map(load_llm_architecture(model_config_path(o.model)), o.gpus, gpu, a);
}

void print_ranges(const ConfigMap& map, const GpuSpec& gpu, double out_tokens) {
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {0, 0, 0};
  std::string lo_name[3], hi_name[3];
  int fits = 0;
  for (const ConfigMapEntry& e : map.entries) {
    if (e.memory_bytes / e.gpus() > gpu.memory_bytes) continue;  // does not fit its GPUs
    ++fits;
    const double v[3] = {e.memory_bytes / 1e9, e.latency_s(out_tokens),
                         e.gpus() * e.latency_s(out_tokens)};
    for (int i = 0; i < 3; ++i) {
      if (v[i] < lo[i]) {
        lo[i] = v[i];
        lo_name[i] = e.config.name();
      }
      if (v[i] > hi[i]) {
        hi[i] = v[i];
        hi_name[i] = e.config.name();
      }
    }
  }
  std::printf("%zu configurations, %d fit %s memory (%.0f GB per GPU)\n", map.entries.size(), fits,
              gpu.name.c_str(), gpu.memory_bytes / 1e9);
  if (fits == 0) return;
  std::printf(
      "| metric (modelled) | min | max | spread | min at | max at |\n|---|---|---|---|---|---|\n");
  const char* names[3] = {"memory (GB)", "latency for %.0f tokens (s)", "GPU time (GPU-s)"};
  for (int i = 0; i < 3; ++i) {
    char label[64];
    std::snprintf(label, sizeof(label), names[i], out_tokens);
    std::printf("| %s | %.2f | %.2f | %.2fx | %s | %s |\n", label, lo[i], hi[i], hi[i] / lo[i],
                lo_name[i].c_str(), hi_name[i].c_str());
  }
}

void run_config_map(const MapOptions& o) {
  GpuSpec gpu;
  const ConfigMap map = build_map(o, gpu);
  if (!o.out.empty()) {
    std::ofstream(o.out) << config_map_to_json(map);
    std::printf("wrote %zu configurations to %s\n", map.entries.size(), o.out.c_str());
  }
  if (o.ranges) {
    print_ranges(map, gpu, o.output_tokens);
    return;
  }
  if (!o.out.empty()) return;
  std::printf(
      "| configuration | GPUs | memory (GB) | mem_base (GB) | TTFT (s) | TPOT (ms) | "
      "latency %.0f tok (s) | source |\n|---|---|---|---|---|---|---|---|\n",
      o.output_tokens);
  for (const ConfigMapEntry& e : map.entries) {
    std::printf("| %s | %d | %.2f | %.2f | %.3f | %.2f | %.2f | %s |\n", e.config.name().c_str(),
                e.gpus(), e.memory_bytes / 1e9, e.mem_base_bytes / 1e9, e.ttft_s, e.tpot_s * 1e3,
                e.latency_s(o.output_tokens), e.source.c_str());
  }
}

void run_deploy(const MapOptions& o) {
  GpuSpec gpu;
  const ConfigMap map = build_map(o, gpu);
  Intent intent;
  intent.kind = intent_kind_from_string(o.intent);
  intent.target = o.target;
  intent.output_tokens = o.output_tokens;
  std::vector<GpuState> gpus(o.gpus);
  for (GpuState& g : gpus) g.memory_bytes = gpu.memory_bytes;
  const auto ranked = rank_configurations(map.entries, intent);
  std::printf("intent %s: the first 5 of %zu configurations\n", o.intent.c_str(), ranked.size());
  for (size_t r = 0; r < ranked.size() && r < 5; ++r) {
    const ConfigMapEntry& e = map.entries[ranked[r]];
    std::printf("  %zu. %-24s memory %.1f GB, latency %.2f s, cost %.0f GB*s, %.1f GPU-s\n", r + 1,
                e.config.name().c_str(), e.memory_bytes / 1e9, intent_latency_s(e, intent),
                intent_cost_gbs(e, intent), intent_gpu_seconds(e, intent));
  }
  const auto d = choose_deployment(map.entries, intent, gpus,
                                   placement_policy_from_string(o.placement), 0.5, 0.0);
  if (!d) {
    std::printf("no configuration fits %d x %s\n", o.gpus, gpu.name.c_str());
    return;
  }
  const ConfigMapEntry& e = map.entries[d->entry];
  std::printf("deploy %s (rank %d) on GPUs", e.config.name().c_str(), d->rank + 1);
  for (int g : d->placement.gpus) std::printf(" %d", g);
  std::printf(", layers per stage");
  for (int n : d->placement.layers_per_stage) std::printf(" %d", n);
  std::printf("\n");
}

void run_simulate_cluster(const std::string& spec_file) {
  const ClusterSpec spec = load_cluster_spec(spec_file);
  const auto outcomes = run_cluster(spec);
  std::cout << cluster_report_markdown(spec, outcomes);
}

void add_map_options(CLI::App* cmd, MapOptions& o, bool model_required) {
  auto* m =
      cmd->add_option("model", o.model, "config.json, or a folder holding one (data/llm/NAME)");
  if (model_required) m->required();
  cmd->add_option("--gpu", o.gpu, "GPU type: a6000, a100-80g, h100-80g, a40")
      ->check(CLI::IsMember(gpu_spec_names()));
  cmd->add_option("--gpus", o.gpus, "GPUs in the cluster")->check(CLI::Range(1, 64));
  cmd->add_option("--prompt-tokens", o.prompt_tokens, "Prompt length TTFT is modelled for")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--kv-tokens", o.kv_tokens, "Context the KV cache is sized for")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--output-tokens", o.output_tokens, "Output length latency is quoted at")
      ->check(CLI::Range(1.0, 1e6));
}

}  // namespace

void add_iserve_llm_commands(CLI::App* llm) {
  using namespace tessera::iserve;  // NOLINT
  auto o = std::make_shared<MapOptions>();
  CLI::App* map = llm->add_subcommand(
      "config-map", "iServe's configuration map from the analytic GPU model (modelled numbers)");
  add_map_options(map, *o, false);
  map->add_option("--out", o->out, "Write the map as JSON (tessera-config-map/1)");
  map->add_option("--from", o->from, "Read a configuration map file instead of modelling one")
      ->check(CLI::ExistingFile);
  map->add_flag("--ranges", o->ranges,
                "Print the min/max of memory, latency and GPU time (iServe Fig. 1)");
  map->callback([o] {
    if (o->model.empty() && o->from.empty()) throw CLI::ValidationError("model", "MODEL or --from");
    run_config_map(*o);
  });

  auto d = std::make_shared<MapOptions>();
  CLI::App* deploy = llm->add_subcommand(
      "deploy", "Rank a model's configurations by an intent and place the first that fits");
  add_map_options(deploy, *d, false);
  deploy->add_option("--from", d->from, "A configuration map file")->check(CLI::ExistingFile);
  deploy
      ->add_option("--intent", d->intent, "latency, cost, memory, gpu-hours, latency-slo, cost-slo")
      ->check(CLI::IsMember({"latency", "cost", "memory", "gpu-hours", "latency-slo", "cost-slo"}));
  deploy->add_option("--target", d->target, "SLO: seconds (latency-slo) or GB*s (cost-slo)")
      ->check(CLI::Range(0.0, 1e12));
  deploy->add_option("--placement", d->placement, "least-loaded, packing, hybrid")
      ->check(CLI::IsMember({"least-loaded", "packing", "hybrid"}));
  deploy->callback([d] {
    if (d->model.empty() && d->from.empty()) throw CLI::ValidationError("model", "MODEL or --from");
    run_deploy(*d);
  });

  auto spec = std::make_shared<std::string>();
  CLI::App* sim = llm->add_subcommand(
      "simulate-cluster", "Simulated iServe cluster run against max-PP, max-TP and AlpaServe");
  sim->add_option("spec", *spec, "Cluster run spec (YAML, docs/iserve.md#cluster-simulation)")
      ->required()
      ->check(CLI::ExistingFile);
  sim->callback([spec] { run_simulate_cluster(*spec); });
}

}  // namespace tessera::cli
