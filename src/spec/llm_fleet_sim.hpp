#pragma once

// The simulator's model of the LLM gateway (docs/llm-gateway.md#simulation): `tessera
// simulate` of an `llm:` run spec with `backends:` simulates the fleet behind the gateway
// instead of the run's deployment:
//  - one LLM instance per backend, in the order of `backends:` (worker i is backend i), each
//    with that backend's own KV blocks and step-cost model (its `cost_model:` if it gives
//    one, else the run's `simulation.cost_model`, else the analytic model of its own gpu,
//    parallel and weights): a heterogeneous fleet;
//  - the gateway's hop: a fixed latency added before a request reaches its backend
//    (`simulation.gateway_hop_ms`, added to the app's ingress delay), so it counts in TTFT
//    and end-to-end latency, not in TPOT;
//  - the routing the live gateway runs: the same LlmRouter (src/policy/llm_routing, the
//    row `gateway.routing` names, built from the same step costs), fed what the live gateway
//    knows of each backend (llm_route_backend) and told each finished request's TTFT and
//    TPOT (LlmRouter::observe); a request it sheds ends dropped, reason gateway_shed.
// The schedulers and the dispatcher one engine builds share one LlmFleetState (its router,
// its instances by worker id), owned through shared_ptr by the factories' closures: one
// engine at a time may use the factories. Not thread-safe: that engine's thread.

#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/deployment.hpp"
#include "engine/policies.hpp"
#include "llm/llm_scheduler.hpp"
#include "policy/llm_routing.hpp"
#include "spec/llm_backend_spec.hpp"
#include "spec/sim_options.hpp"

namespace tessera {

struct LlmSpec;

// What the gateway's routing knows of one simulated backend at `now`: in service while its
// instance is; its outstanding requests (queued, waiting, admitted) and of those the ones
// with no first token yet (and their prompt tokens); and the engine's gauges (running,
// waiting, KV-cache usage) as the live gateway reads them: the snapshot of its last scrape,
// one every `scrape_interval` (0: only the first), taken at the first decision after it.
struct LlmFleetBackend {
  LlmInstanceScheduler* scheduler = nullptr;  // owned by the engine
  LlmRouteBackend scraped;                    // the gauges of the last scrape
  Time scraped_at = -1.0;                     // < 0: never
};

struct LlmFleetState {
  std::vector<LlmFleetBackend> backends;  // by WorkerId
  std::unique_ptr<LlmRouter> router;
  bool reads_engine_load = false;  // the policy's row: scrape the gauges
  Time scrape_interval = 1.0;
  // The decision of each request routed and not yet observed, by request slot.
  struct Routed {
    int backend = -1;
    LlmRoutePrediction prediction;
    uint32_t prompt_tokens = 0;  // the gateway's estimate
  };
  std::unordered_map<RequestSlot, Routed> routed;

  LlmRouteBackend route_backend(const Worker& worker, Time now);
};

// How the simulated gateway reads a request, as the live one reads the request's text
// (src/serve/server/llm_route_request): the run's priority and SLOs; the prompt's estimated
// tokens (its bytes / kLlmBytesPerToken, the prompt being `bytes_per_token` bytes a token);
// the hashes of its first `max_blocks` blocks of `block_tokens` * kLlmBytesPerToken bytes.
struct LlmFleetRequests {
  LlmRouteRequest defaults;
  uint32_t block_tokens = 16;
  uint32_t max_blocks = 4;
  uint32_t bytes_per_token = kLlmBytesPerToken;
};

// The deployment the simulator runs for a gateway run: one instance per backend of the
// run's one task, with the variant, segment and batch bound of `base`'s first group.
Deployment llm_fleet_deployment(const Deployment& base, std::size_t backends);

// Sets `sim` (cost model, instance schedulers, dispatcher) to simulate `gateway`'s fleet
// with `llm`'s scheduler settings and its SLOs; `sim.cost_model` on entry is the run's
// `simulation.cost_model` (null: none), the default of backends without their own.
void simulate_llm_fleet(const LlmGatewaySpec& gateway, const LlmSpec& llm, SimOptions& sim);

}  // namespace tessera
