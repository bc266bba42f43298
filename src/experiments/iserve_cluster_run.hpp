#pragma once

// One system's cluster run on the engine (iserve_cluster.hpp): the simulator runs one
// request per query through an app of one task whose instances are the models' endpoint
// slots (`slots[m]` per model, the most endpoints its system may give it). A data plane on
// the engine (ClusterPlane in the .cpp, the pattern of PPipe's reservation plane) deploys
// the models one after another as queries reach their deployment times (`decide`: a
// model's configurations placed on GPUs, one per slot it fills), gives every query, at its
// arrival, the endpoint of its model that can start it first, and reserves that endpoint's
// GPUs from then for the query's latency (FCFS per GPU, no batching: co-located endpoints
// queue behind each other); each instance runs its queries at their reserved starts. A
// query of a model with no endpoint fails at the task. Internal to experiments/; one thread.

#include <functional>
#include <string>
#include <vector>

#include "experiments/iserve_cluster.hpp"
#include "plan/iserve/placement.hpp"

namespace tessera::iserve {

// One query of the workload: its arrival, output tokens and model.
struct Query {
  double arrival = 0;
  int output = 0;
  int model = 0;
};

// A model's configuration placed on GPUs.
struct Endpoint {
  int entry = -1;
  std::vector<int> gpus;
  std::vector<int> layers;  // per stage
  int tp = 1;
};

// An FP16 configuration without quantised KV cache or pruning (what max-PP, max-TP,
// AlpaServe and the SLO base use).
inline bool plain_fp16(const ConfigMapEntry& e) {
  return e.config.weights == WeightQuant::kFp16 && e.config.kv_cache == KvQuant::kFp16 &&
         e.config.pruning == Pruning::kNone;
}

// Decides a model's endpoints when it is deployed (at `now`, given the GPUs' state).
using Decide =
    std::function<std::vector<Endpoint>(int model, std::vector<GpuState>& gpus, double now)>;

// Runs `queries` (in arrival order) on the engine with the models deployed one after
// another, every `deploy_interval_s`, as `decide` says; the outcome's metrics. Throws
// std::logic_error when `decide` gives a model more endpoints than its slots, or when the
// engine's ledger and the reservations disagree.
SystemOutcome simulate_on_engine(const ClusterSpec& spec, const std::vector<Query>& queries,
                                 const std::string& name, const Decide& decide,
                                 const std::vector<int>& slots);

}  // namespace tessera::iserve
