#include "plan/iserve/controller.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tessera::iserve {

std::string to_string(IntentKind k) {
  switch (k) {
    case IntentKind::kMinLatency:
      return "latency";
    case IntentKind::kMinCost:
      return "cost";
    case IntentKind::kMinMemory:
      return "memory";
    case IntentKind::kMinGpuHours:
      return "gpu-hours";
    case IntentKind::kLatencySlo:
      return "latency-slo";
    case IntentKind::kCostSlo:
      return "cost-slo";
  }
  return "?";
}

IntentKind intent_kind_from_string(const std::string& name) {
  for (IntentKind k : {IntentKind::kMinLatency, IntentKind::kMinCost, IntentKind::kMinMemory,
                       IntentKind::kMinGpuHours, IntentKind::kLatencySlo, IntentKind::kCostSlo}) {
    if (to_string(k) == name) return k;
  }
  throw std::invalid_argument("unknown intent '" + name +
                              "' (known: latency, cost, memory, gpu-hours, latency-slo, cost-slo)");
}

double intent_latency_s(const ConfigMapEntry& e, const Intent& intent) {
  return e.latency_s(intent.output_tokens);
}
double intent_cost_gbs(const ConfigMapEntry& e, const Intent& intent) {
  return e.memory_bytes / 1e9 * intent_latency_s(e, intent);
}
double intent_gpu_seconds(const ConfigMapEntry& e, const Intent& intent) {
  return e.gpus() * intent_latency_s(e, intent);
}

std::vector<int> rank_configurations(const std::vector<ConfigMapEntry>& entries,
                                     const Intent& intent) {
  std::vector<int> all(entries.size());
  std::iota(all.begin(), all.end(), 0);
  auto by = [&](auto key) {
    return [&entries, key](int a, int b) { return key(entries[a]) < key(entries[b]); };
  };
  auto latency = [&](const ConfigMapEntry& e) { return intent_latency_s(e, intent); };
  auto cost = [&](const ConfigMapEntry& e) { return intent_cost_gbs(e, intent); };
  auto memory = [](const ConfigMapEntry& e) { return e.memory_bytes; };
  auto gpu_s = [&](const ConfigMapEntry& e) { return intent_gpu_seconds(e, intent); };
  switch (intent.kind) {
    case IntentKind::kMinLatency:
      std::stable_sort(all.begin(), all.end(), by(latency));
      return all;
    case IntentKind::kMinCost:
      std::stable_sort(all.begin(), all.end(), by(cost));
      return all;
    case IntentKind::kMinMemory:
      std::stable_sort(all.begin(), all.end(), by(memory));
      return all;
    case IntentKind::kMinGpuHours:
      std::stable_sort(all.begin(), all.end(), by(gpu_s));
      return all;
    case IntentKind::kLatencySlo:
    case IntentKind::kCostSlo: {
      const bool lat = intent.kind == IntentKind::kLatencySlo;
      auto meets = [&](int i) {
        return lat ? latency(entries[i]) <= intent.target : cost(entries[i]) <= intent.target;
      };
      auto mid = std::stable_partition(all.begin(), all.end(), meets);
      // Within the target: cheapest (latency SLO) or fastest (cost SLO) first; then the
      // rest, best effort: fastest (latency SLO) or cheapest (cost SLO) first.
      if (lat) {
        std::stable_sort(all.begin(), mid, by(cost));
        std::stable_sort(mid, all.end(), by(latency));
      } else {
        std::stable_sort(all.begin(), mid, by(latency));
        std::stable_sort(mid, all.end(), by(cost));
      }
      return all;
    }
  }
  return all;
}

std::optional<DeploymentChoice> choose_deployment(const std::vector<ConfigMapEntry>& entries,
                                                  const Intent& intent,
                                                  const std::vector<GpuState>& gpus,
                                                  PlacementPolicy policy, double theta, Time now) {
  const std::vector<int> ranked = rank_configurations(entries, intent);
  for (size_t r = 0; r < ranked.size(); ++r) {
    const ConfigMapEntry& e = entries[ranked[r]];
    const int tp = e.config.parallelism.tp;
    const int pp = e.config.parallelism.pp;
    if (e.layers <= 0) continue;
    const double block = e.memory_bytes / (static_cast<double>(tp) * static_cast<double>(e.layers));
    StagePlacement p = place(gpus, tp, pp, static_cast<int>(e.layers), block, policy, theta, now);
    if (p.gpus.empty()) continue;
    return DeploymentChoice{ranked[r], std::move(p), static_cast<int>(r)};
  }
  return std::nullopt;
}

void apply_deployment(std::vector<GpuState>& gpus, const DeploymentChoice& d, int tp) {
  const StagePlacement& p = d.placement;
  for (size_t s = 0; s < p.layers_per_stage.size(); ++s) {
    for (int r = 0; r < tp; ++r) {
      gpus[p.gpus[s * tp + r]].used_bytes += p.layers_per_stage[s] * p.block_bytes;
    }
  }
}

plan::PlanResult<std::optional<DeploymentChoice>> IServePlanner::plan(
    const IServeRequest& request) const {
  plan::PlanResult<std::optional<DeploymentChoice>> out;
  out.report = choose_deployment(request.entries, request.intent, request.gpus, request.policy,
                                 request.theta, request.now);
  if (!out.report) {
    out.status = plan::PlanStatus::kInfeasible;
    out.message = "no configuration of " + request.model + " fits the GPUs' free memory";
    return out;
  }
  // The ranking is exact: the first configuration that places is the answer.
  out.status = plan::PlanStatus::kOptimal;
  const ConfigMapEntry& entry = request.entries[static_cast<std::size_t>(out.report->entry)];
  plan::PlannedDeployment d;
  d.name = request.model;
  d.app.name = request.model;
  Task llm;
  llm.name = "llm";
  llm.variants = {Variant{entry.config.name()}};
  d.app.tasks = {llm};
  d.app.finalize();
  WorkerGroup group;
  group.task = 0;
  group.variants = {0};
  group.segment = request.gpu;
  group.count = 1;
  d.deployment.groups = {group};
  out.deployments.push_back(std::move(d));
  return out;
}

}  // namespace tessera::iserve
