#pragma once

// iServe's deployment controller (§6, digest §3.1–3.2): ranks a model's configurations by
// the developer's intent, walks the ranking to the first configuration whose per-layer
// memory blocks fit the cluster's free memory, and places it (placement.hpp).
//
// Intents (§3.2, §4.1): minimise latency, cost (GPU memory × latency — the default),
// memory, or GPU-hours ((TP × PP) × latency); a latency SLO (the configurations meeting it,
// cheapest first by the default cost; none meeting it → the fastest first, best effort); a
// cost SLO (the configurations within the budget, fastest first — "maximize their
// performance within budget"; none → the cheapest first). Latency is Eq. 1 at the intent's
// output length. Ties keep the configuration map's order.
// Pure functions; the caller owns the GPU states it passes in and applies the result.

#include <optional>
#include <string>
#include <vector>

#include "llm_arch/config_map.hpp"
#include "plan/iserve/placement.hpp"
#include "plan/planner.hpp"

namespace tessera::iserve {

enum class IntentKind { kMinLatency, kMinCost, kMinMemory, kMinGpuHours, kLatencySlo, kCostSlo };

struct Intent {
  IntentKind kind = IntentKind::kMinCost;
  double target = 0;           // s for a latency SLO; GB·s for a cost SLO
  double output_tokens = 100;  // the output length latency is ranked at (Fig. 1: 100)
};

std::string to_string(IntentKind k);
// "latency", "cost", "memory", "gpu-hours", "latency-slo", "cost-slo"; invalid_argument.
IntentKind intent_kind_from_string(const std::string& name);

// The intent's metrics of one configuration.
double intent_latency_s(const ConfigMapEntry& e, const Intent& intent);
double intent_cost_gbs(const ConfigMapEntry& e, const Intent& intent);  // GB × s
double intent_gpu_seconds(const ConfigMapEntry& e, const Intent& intent);

// The entries (indices into `entries`) best first.
std::vector<int> rank_configurations(const std::vector<ConfigMapEntry>& entries,
                                     const Intent& intent);

struct DeploymentChoice {
  int entry = -1;  // index into the entries ranked
  StagePlacement placement;
  int rank = 0;  // position in the ranking of the configuration chosen (0 = the best)
};

// Walks the ranking; the first configuration that places wins. nullopt when none fits.
// Each GPU of a stage holding n layers then needs n × block_bytes.
std::optional<DeploymentChoice> choose_deployment(const std::vector<ConfigMapEntry>& entries,
                                                  const Intent& intent,
                                                  const std::vector<GpuState>& gpus,
                                                  PlacementPolicy policy, double theta, Time now);

// Reserves a deployment's memory on its GPUs.
void apply_deployment(std::vector<GpuState>& gpus, const DeploymentChoice& d, int tp);

// What iServe's controller is asked: a model's configuration map, the developer's intent,
// the cluster's GPUs as they are now, and the placement policy.
struct IServeRequest {
  std::string model;                           // the model's name: the deployment's app
  const std::vector<ConfigMapEntry>& entries;  // its configuration map
  Intent intent;
  const std::vector<GpuState>& gpus;
  PlacementPolicy policy = PlacementPolicy::kHybrid;
  double theta = 0.5;  // hybrid(θ)
  Time now = 0.0;      // for the GPUs' loads
  std::string gpu;     // the GPUs' type: the deployment's segment
};

// choose_deployment behind the seam: the report is the configuration chosen with its
// placement (nullopt, status infeasible: none fits); the deployment, one LLM instance of it
// (task "llm", the configuration's name as its variant, on the GPU type's segment). The
// caller reserves the memory (apply_deployment).
class IServePlanner final : public plan::Planner<IServeRequest, std::optional<DeploymentChoice>> {
 public:
  plan::PlannerKind kind() const override { return plan::PlannerKind::kIServe; }
  plan::PlanResult<std::optional<DeploymentChoice>> plan(
      const IServeRequest& request) const override;
};

}  // namespace tessera::iserve
