#include "llm_arch/deployment_config.hpp"

#include <array>
#include <stdexcept>
#include <utility>

namespace tessera {
namespace {

constexpr std::array<std::pair<WeightQuant, const char*>, 4> kWeightNames{{
    {WeightQuant::kFp16, "fp16"},
    {WeightQuant::kInt8, "int8"},
    {WeightQuant::kInt4, "int4"},
    {WeightQuant::kGptq4, "gptq4"},
}};
constexpr std::array<std::pair<KvQuant, const char*>, 2> kKvNames{{
    {KvQuant::kFp16, "kv16"},
    {KvQuant::kInt8, "kv8"},
}};
constexpr std::array<std::pair<Pruning, const char*>, 5> kPruningNames{{
    {Pruning::kNone, "none"},
    {Pruning::kWanda24, "wanda2:4"},
    {Pruning::kWanda50, "wanda50"},
    {Pruning::kLlmPruner25, "llm-pruner25"},
    {Pruning::kLlmPruner50, "llm-pruner50"},
}};

template <typename Enum, std::size_t N>
std::string name_of(const std::array<std::pair<Enum, const char*>, N>& names, Enum value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "?";
}

template <typename Enum, std::size_t N>
Enum parse(const std::array<std::pair<Enum, const char*>, N>& names, const std::string& text,
           const char* what) {
  std::string choices;
  for (const auto& [v, name] : names) {
    if (text == name) return v;
    choices += std::string(choices.empty() ? "" : ", ") + name;
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + text + "' (one of " +
                              choices + ")");
}

}  // namespace

std::string to_string(WeightQuant q) { return name_of(kWeightNames, q); }
std::string to_string(KvQuant q) { return name_of(kKvNames, q); }
std::string to_string(Pruning p) { return name_of(kPruningNames, p); }
WeightQuant weight_quant_from_string(const std::string& name) {
  return parse(kWeightNames, name, "weight quantisation");
}
KvQuant kv_quant_from_string(const std::string& name) {
  return parse(kKvNames, name, "KV-cache quantisation");
}
Pruning pruning_from_string(const std::string& name) {
  return parse(kPruningNames, name, "pruning method");
}

std::string LlmDeploymentConfig::name() const {
  std::string out =
      "tp" + std::to_string(parallelism.tp) + "-pp" + std::to_string(parallelism.pp) + "-";
  if (pruning != Pruning::kNone) return out + to_string(pruning);
  return out + to_string(weights) + "-" + to_string(kv_cache);
}

std::string parallelism_problem(const LlmArchitecture& arch, const Parallelism& p) {
  if (p.tp < 1 || (p.tp & (p.tp - 1)) != 0) return "TP must be a power of two";
  if (p.pp < 1) return "PP must be at least 1";
  if (arch.heads % p.tp != 0) {
    return "TP " + std::to_string(p.tp) + " does not divide the " + std::to_string(arch.heads) +
           " attention heads";
  }
  if (arch.kv_heads % p.tp != 0 && p.tp % arch.kv_heads != 0) {
    return "TP " + std::to_string(p.tp) + " neither divides nor is a multiple of the " +
           std::to_string(arch.kv_heads) + " key/value heads";
  }
  if (p.pp > arch.layers) {
    return "PP " + std::to_string(p.pp) + " exceeds the " + std::to_string(arch.layers) + " layers";
  }
  return "";
}

std::vector<Parallelism> parallelism_options(const LlmArchitecture& arch, int gpus) {
  std::vector<Parallelism> out;
  for (int tp = 1; tp <= gpus; tp *= 2) {
    for (int pp = 1; tp * pp <= gpus; ++pp) {
      const Parallelism p{tp, pp};
      if (parallelism_problem(arch, p).empty()) out.push_back(p);
    }
  }
  return out;
}

std::vector<LlmDeploymentConfig> enumerate_deployment_configs(const LlmArchitecture& arch, int gpus,
                                                              const SupportMask& mask) {
  std::vector<LlmDeploymentConfig> out;
  for (const Parallelism& p : parallelism_options(arch, gpus)) {
    for (WeightQuant w : mask.weights) {
      for (KvQuant kv : mask.kv_caches) out.push_back({p, w, kv, Pruning::kNone});
    }
    for (Pruning pruning : mask.prunings) {
      if (pruning != Pruning::kNone)
        out.push_back({p, WeightQuant::kFp16, KvQuant::kFp16, pruning});
    }
  }
  return out;
}

}  // namespace tessera
