#pragma once

// The gateway side of a run spec's `llm:` section (docs/llm-gateway.md): `backends:`, the
// remote OpenAI-compatible engines (vLLM, SGLang, TGI, `tessera serve` of an llm: run) that
// serve the model, each with its URL and its deployment (GPU, TP x PP, quantisation) and so
// its own step-cost model; and `gateway:`, how the gateway talks to them (routing policy,
// timeouts, health checks, retries). A plain value, parsed here; the client and the
// gateway live in src/serve. Pure functions; thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/spec_node.hpp"
#include "engine/cost_model.hpp"
#include "llm/llm_model.hpp"
#include "llm/llm_parallel.hpp"
#include "policy/llm_routing.hpp"

namespace tessera {

struct LlmSpec;
struct RunSpec;

struct LlmBackendSpec {
  std::string url;   // as written: "http://HOST:PORT[/PREFIX]"
  std::string host;  // from the URL
  int port = 80;
  std::string prefix;  // the URL's path ("" or "/prefix", no trailing "/")
  std::string model;   // the model name the backend serves (the body's "model")
  // The deployment: the model's shape with this backend's weights (quantisation), its GPU
  // and its TP x PP; the KV blocks they leave and the step-cost model they give.
  LlmModel shape;
  LlmGpu gpu;
  LlmParallelism parallel;
  uint32_t kv_blocks = 0;
  std::shared_ptr<const CostModel> cost;
  // `cost_model:`: the step costs measured on this backend (kind llm_measured, as `tessera
  // llm step-profile --cost-model-out` writes them); null: none. The simulator runs them,
  // and the router's step costs (llm_router_setup) are sampled from them when given.
  std::shared_ptr<const CostModel> sim_cost;
  // Sent as `Authorization: Bearer KEY`: the value of this environment variable, read when
  // the gateway starts ("": no key). Never the key itself in the spec.
  std::string api_key_env;
};

struct LlmGatewaySpec {
  std::vector<LlmBackendSpec> backends;
  std::string routing = "least_outstanding";  // a row of llm_routing_policies()
  // The policies' parameters (prefix_affinity's blocks and load factor, ...).
  LlmRoutingConfig routing_config;
  // A request's priority when it names none (x-tessera-priority, the body's tessera.priority).
  LlmPriority default_priority = LlmPriority::kSheddable;
  uint32_t block_tokens = 16;  // the llm: section's KV block: prefix_affinity's block
  double connect_timeout_ms = 1000.0;
  // The longest a backend may stay silent (before its answer's head, between two events).
  double timeout_ms = 30000.0;
  int retries = 1;  // re-sends, elsewhere, of a request failed before its first token
  double health_interval_ms = 1000.0;  // 0: no periodic checks
  double health_timeout_ms = 500.0;
  std::string health_path = "/health";  // vLLM, SGLang and TGI serve it; so does tessera
  // Read with each health check under `kv_load` routing: vLLM's metric names (vLLM and
  // tessera's LLM server serve them here).
  std::string metrics_path = "/metrics";
  int64_t max_event_bytes = 1 << 20;  // a longer server-sent event is a broken backend
  // Completed calls leave their connection open for the next call to the same backend (a
  // pool per backend, at most `max_idle` each); false: a new connection per call.
  bool keep_alive = true;
};

// The gateway's part of a run spec's llm: section, read again from the run's file (its
// model, GPU and parallelism are the backends' defaults); nullopt when the section lists no
// backends (the run serves a local checkpoint). Throws SpecError as parse_llm_gateway.
std::optional<LlmGatewaySpec> load_llm_gateway(const RunSpec& run);

// What the routing policy's factory takes (llm_routing_policies()): the spec's
// routing_config and each backend's step cost sampled from its measured cost_model, else its
// analytic cost model. The live gateway and the simulator build their routers from it, so
// both see the same inputs.
LlmRouterSetup llm_router_setup(const LlmGatewaySpec& spec);

// Pieces of the llm: section (llm_spec.cpp), shared with the backends' deployment fields:
// a `gpu:` map, a `parallel:` map, and a `weights:` dtype as bytes per parameter.
LlmGpu parse_llm_gpu(const SpecNode& node);
LlmParallelism parse_llm_parallel(const SpecNode& node);
double parse_llm_weight_bytes(const SpecNode& node);

// Reads `backends:` (a list) and `gateway:` (a map, optional) of the `llm:` section whose
// model, GPU and parallelism (`base`) are each backend's defaults. Throws SpecError naming
// the file and field at fault (backends[2].url, backends[0].gpu.memory_gb, ...).
LlmGatewaySpec parse_llm_gateway(const SpecNode& backends, const std::optional<SpecNode>& gateway,
                                 const LlmSpec& base);

}  // namespace tessera
