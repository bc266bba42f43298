#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "llm/deployment_config.hpp"
#include "llm/llm_architecture.hpp"

namespace tessera::cli {
namespace {

// A model argument: a config.json, or a directory holding one (a checkpoint folder or a
// bundled model such as data/llm/llama-2-70b).
std::filesystem::path config_path(const std::string& model) {
  std::filesystem::path p(model);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  return p;
}

template <typename Enum, typename Parse>
std::vector<Enum> parse_list(const std::vector<std::string>& names, Parse parse,
                             std::vector<Enum> fallback) {
  if (names.empty()) return fallback;
  std::vector<Enum> out;
  for (const std::string& name : names) out.push_back(parse(name));
  return out;
}

struct ConfigsOptions {
  std::string model;
  int gpus = 8;
  std::vector<std::string> weights, kv_caches, prunings;
  bool json = false;
};

void run_configs(const ConfigsOptions& o) {
  const LlmArchitecture arch = load_llm_architecture(config_path(o.model));
  SupportMask mask;
  mask.weights = parse_list(o.weights, weight_quant_from_string, mask.weights);
  mask.kv_caches = parse_list(o.kv_caches, kv_quant_from_string, mask.kv_caches);
  if (o.prunings.size() == 1 && o.prunings[0] == "none") {
    mask.prunings.clear();
  } else {
    mask.prunings = parse_list(o.prunings, pruning_from_string, mask.prunings);
  }
  const std::vector<Parallelism> options = parallelism_options(arch, o.gpus);
  const std::vector<LlmDeploymentConfig> configs = enumerate_deployment_configs(arch, o.gpus, mask);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = arch.name;
    j["gpus"] = o.gpus;
    j["parallelism_options"] = options.size();
    j["configurations"] = nlohmann::json::array();
    for (const LlmDeploymentConfig& c : configs) {
      j["configurations"].push_back({{"name", c.name()},
                                     {"tp", c.parallelism.tp},
                                     {"pp", c.parallelism.pp},
                                     {"weights", to_string(c.weights)},
                                     {"kv_cache", to_string(c.kv_cache)},
                                     {"pruning", to_string(c.pruning)}});
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s (%s): %lld layers, hidden %lld, %lld heads / %lld KV heads, %.2fB parameters\n",
              arch.name.c_str(), arch.family.c_str(), static_cast<long long>(arch.layers),
              static_cast<long long>(arch.hidden), static_cast<long long>(arch.heads),
              static_cast<long long>(arch.kv_heads),
              static_cast<double>(arch.total_params()) / 1e9);
  std::ostringstream pairs;
  for (const Parallelism& p : options) pairs << " " << p.tp << "x" << p.pp;
  std::printf("%zu parallelism options (TP x PP) on %d GPUs:%s\n", options.size(), o.gpus,
              pairs.str().c_str());
  for (int tp = 1; tp <= o.gpus; tp *= 2) {
    const std::string problem = parallelism_problem(arch, Parallelism{tp, 1});
    if (!problem.empty()) std::printf("  not TP %d: %s\n", tp, problem.c_str());
  }
  std::printf("%zu configurations\n", configs.size());
  for (const LlmDeploymentConfig& c : configs) std::printf("  %s\n", c.name().c_str());
}

}  // namespace

void add_llm_command(CLI::App& app) {
  CLI::App* llm =
      app.add_subcommand("llm", "LLM deployment: architectures and iServe configurations");
  llm->require_subcommand(1);

  auto o = std::make_shared<ConfigsOptions>();
  CLI::App* configs = llm->add_subcommand(
      "configs", "List the deployment configurations (TP x PP x compression) of an LLM");
  configs->add_option("model", o->model, "config.json, or a folder holding one (data/llm/NAME)")
      ->required();
  configs->add_option("--gpus", o->gpus, "GPUs available (TP x PP at most this)")
      ->check(CLI::Range(1, 1024));
  configs->add_option("--weights", o->weights, "Weight quantisations (fp16 int8 int4 gptq4)");
  configs->add_option("--kv", o->kv_caches, "KV-cache quantisations (kv16 kv8)");
  configs->add_option("--pruning", o->prunings,
                      "Pruning methods (wanda2:4 wanda50 llm-pruner25 llm-pruner50, or none)");
  configs->add_flag("--json", o->json, "Print JSON instead of a table");
  configs->callback([o] { run_configs(*o); });
}

}  // namespace tessera::cli
