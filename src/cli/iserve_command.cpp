// `tessera llm config-map | deploy | instances | simulate-cluster`: iServe's GPU-scale side — the
// analytic configuration map, the controller's choice for an intent, and the simulated
// cluster runs (docs/iserve.md#gpu-model).

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "cli/commands.hpp"
#include "cli/finite_range.hpp"
#include "core/error.hpp"
#include "experiments/iserve_cluster.hpp"
#include "iserve/analytic_model.hpp"
#include "llm_arch/config_map.hpp"
#include "llm_arch/llm_architecture.hpp"
#include "plan/iserve/controller.hpp"

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
  // instances
  std::string config;  // only this configuration (e.g. "tp2-pp2-fp16-kv16")
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
  const auto d = IServePlanner()
                     .plan({o.model, map.entries, intent, gpus,
                            placement_policy_from_string(o.placement), 0.5, 0.0, gpu.name})
                     .report;
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

// Deploys `models` one after another on an empty cluster with the controller (the intent,
// hybrid placement at θ 0.5) and writes each deployed model's `llm:` section (the TP × PP
// instance of the simulated data plane) to DIR/model-<i>.yaml, with DIR/deployments.json
// listing them; prints the deployments as a markdown table. An instance's KV cache is the
// controller's reservation (kv_tokens) plus, on each of its GPUs, an equal share among the
// instances there of the memory no deployment took.
void run_instances(const MapOptions& o, const std::vector<std::string>& models,
                   const std::string& dir) {
  const GpuSpec gpu = gpu_spec(o.gpu);
  AnalyticOptions a;
  a.prompt_tokens = o.prompt_tokens;
  a.kv_tokens = o.kv_tokens;
  a.decode_context = o.prompt_tokens + static_cast<int>(o.output_tokens / 2);
  Intent intent;
  intent.kind = intent_kind_from_string(o.intent);
  intent.target = o.target;
  intent.output_tokens = o.output_tokens;
  std::vector<GpuState> gpus(o.gpus);
  for (GpuState& g : gpus) g.memory_bytes = gpu.memory_bytes;
  struct Deployed {
    std::string label;
    ConfigMapEntry entry;
    DeploymentChoice d;
    bool ok = false;
  };
  std::vector<Deployed> all;
  std::vector<int> sharing(gpus.size(), 0);
  for (const std::string& model : models) {
    const LlmArchitecture arch = load_llm_architecture(model_config_path(model));
    ConfigMap map = analytic_config_map(arch, o.gpus, gpu, a);
    if (!o.config.empty()) {
      std::erase_if(map.entries,
                    [&](const ConfigMapEntry& e) { return e.config.name() != o.config; });
      if (map.entries.empty()) {
        throw std::invalid_argument(model + ": no configuration " + o.config + " on " +
                                    std::to_string(o.gpus) + " GPUs");
      }
    }
    Deployed x;
    x.label = std::filesystem::path(model).filename().string();
    const auto d = IServePlanner()
                       .plan({x.label, map.entries, intent, gpus, PlacementPolicy::kHybrid, 0.5,
                              0.0, gpu.name})
                       .report;
    if (d) {
      x.entry = map.entries[d->entry];
      x.d = *d;
      x.ok = true;
      apply_deployment(gpus, *d, x.entry.config.parallelism.tp);
      for (int g : d->placement.gpus) ++sharing[g];
    }
    all.push_back(x);
  }
  std::filesystem::create_directories(dir);
  std::string json = "[";
  std::printf(
      "| # | model | configuration | GPUs | layers per stage | TTFT (s) | TPOT (ms) | KV blocks "
      "(16 tokens) |\n|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < all.size(); ++i) {
    const Deployed& x = all[i];
    if (json.size() > 1) json += ",";
    if (!x.ok) {
      std::printf("| %zu | %s | - | - | - | - | - | - |\n", i, x.label.c_str());
      json += "{\"model\": \"" + x.label + "\", \"config\": null}";
      continue;
    }
    const LlmArchitecture arch = load_llm_architecture(model_config_path(models[i]));
    LlmInstanceModel inst = analytic_instance(arch, x.entry.config, gpu, a);
    double kv =
        static_cast<double>(a.kv_tokens) * llm_kv_bytes_per_token(inst.model, inst.parallel.tp);
    std::string on, layers;
    for (int g : x.d.placement.gpus) {
      kv += std::max(0.0, gpus[g].free_bytes()) / sharing[g];
      on += (on.empty() ? "" : ",") + std::to_string(g);
    }
    for (int n : x.d.placement.layers_per_stage) {
      layers += (layers.empty() ? "" : "/") + std::to_string(n);
    }
    const double n = inst.parallel.gpus();
    inst.parallel.reserved_bytes_per_gpu =
        std::max(0.0, (n * gpu.memory_bytes - inst.model.weight_bytes_total() - kv) / n);
    const std::string file = "model-" + std::to_string(i) + ".yaml";
    std::ofstream(std::filesystem::path(dir) / file)
        << llm_section_yaml(inst, x.label + " " + x.entry.config.name() + " on " + gpu.name);
    const uint32_t blocks = kv_blocks_for(inst.model, inst.gpu, inst.parallel, 16);
    std::printf("| %zu | %s | %s | %s | %s | %.3f | %.2f | %u |\n", i, x.label.c_str(),
                x.entry.config.name().c_str(), on.c_str(), layers.c_str(), x.entry.ttft_s,
                x.entry.tpot_s * 1e3, blocks);
    json += "{\"model\": \"" + x.label + "\", \"config\": \"" + x.entry.config.name() +
            "\", \"gpus\": \"" + on + "\", \"layers\": \"" + layers +
            "\", \"ttft_s\": " + std::to_string(x.entry.ttft_s) +
            ", \"tpot_s\": " + std::to_string(x.entry.tpot_s) +
            ", \"memory_gb\": " + std::to_string(x.entry.memory_bytes / 1e9) +
            ", \"kv_blocks\": " + std::to_string(blocks) + ", \"file\": \"" + file + "\"}";
  }
  std::ofstream(std::filesystem::path(dir) / "deployments.json") << json << "]\n";
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
      ->check(finite_range(1.0, 1e6));
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
      ->check(finite_range(0.0, 1e12));
  deploy->add_option("--placement", d->placement, "least-loaded, packing, hybrid")
      ->check(CLI::IsMember({"least-loaded", "packing", "hybrid"}));
  deploy->callback([d] {
    if (d->model.empty() && d->from.empty()) throw CLI::ValidationError("model", "MODEL or --from");
    run_deploy(*d);
  });

  auto io = std::make_shared<MapOptions>();
  auto models = std::make_shared<std::vector<std::string>>();
  auto dir = std::make_shared<std::string>();
  CLI::App* inst = llm->add_subcommand(
      "instances",
      "Deploy models one after another by an intent; write each one's llm: section (TP x PP "
      "instance, docs/llm.md#tp--pp-instances)");
  inst->add_option("models", *models, "config.json files or folders (data/llm/NAME)")->required();
  inst->add_option("--gpu", io->gpu, "GPU type: a6000, a100-80g, h100-80g, a40")
      ->check(CLI::IsMember(gpu_spec_names()));
  inst->add_option("--gpus", io->gpus, "GPUs in the cluster")->check(CLI::Range(1, 64));
  inst->add_option("--intent", io->intent,
                   "latency, cost, memory, gpu-hours, latency-slo, cost-slo")
      ->check(CLI::IsMember({"latency", "cost", "memory", "gpu-hours", "latency-slo", "cost-slo"}));
  inst->add_option("--target", io->target, "SLO: seconds (latency-slo) or GB*s (cost-slo)")
      ->check(finite_range(0.0, 1e12));
  inst->add_option("--prompt-tokens", io->prompt_tokens, "Prompt length TTFT is modelled for")
      ->check(CLI::Range(1, 1 << 20));
  inst->add_option("--kv-tokens", io->kv_tokens, "Context the KV cache is sized for")
      ->check(CLI::Range(1, 1 << 24));
  inst->add_option("--output-tokens", io->output_tokens, "Output length latency is ranked at")
      ->check(finite_range(1.0, 1e6));
  inst->add_option("--config", io->config,
                   "Deploy only this configuration (e.g. tp2-pp2-fp16-kv16) instead of ranking");
  inst->add_option("--out", *dir, "Directory for model-<i>.yaml and deployments.json")->required();
  inst->callback([io, models, dir] { run_instances(*io, *models, *dir); });

  auto spec = std::make_shared<std::string>();
  CLI::App* sim = llm->add_subcommand(
      "simulate-cluster", "Simulated iServe cluster run against max-PP, max-TP and AlpaServe");
  sim->add_option("spec", *spec, "Cluster run spec (YAML, docs/iserve.md#cluster-simulation)")
      ->required()
      ->check(CLI::ExistingFile);
  sim->callback([spec] { run_simulate_cluster(*spec); });
}

}  // namespace tessera::cli
