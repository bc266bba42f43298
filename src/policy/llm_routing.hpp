#pragma once

// LLM routing: which backend (a remote engine, or a simulated LLM instance) serves an LLM
// request, or whether to shed it at once. One interface for the live gateway
// (src/serve/server/llm_gateway.*) and the simulator, so both run the same code on the
// same inputs; no sockets, no clocks, no serve/ dependency (docs/llm-gateway.md#routing).
//
// The caller owns the backends' state and passes it in on every call (LlmRouteBackend: in
// service or not, its requests in flight, the engine's last scraped gauges); the router
// owns only its own memory (a round-robin cursor, a hash ring, online calibration). A call
// is:
//
//   LlmRouteDecision d = router.pick(request, backends, skip, now);
//   if (d.kind == LlmRouteDecision::Kind::kRoute) { ... send to backends[d.backend];
//     the caller counts it outstanding (and awaiting its first token) on that backend
//     before its next pick ... }
//   ... when the request ends with its first token seen:
//   router.observe({d.backend, d.prediction, measured TTFT, measured TPOT, tokens});
//
// `skip` lists backends already tried for this request (a retry goes elsewhere). A router
// never returns a backend that is down or in `skip`. kNoBackend: none in service and not
// skipped; kShed: `slo_aware` refuses a sheddable request no backend can serve within its
// TTFT SLO (reason and a retry-after hint given; a critical one is never shed).
//
// Policies are rows of llm_routing_policies() (name, summary, whether it reads the engines'
// gauges, factory), the way the engine's policies are rows of policy/registry.hpp; the
// gateway spec's `routing:` takes the rows' names.
//
// Threads: a router is not thread-safe; its owner calls pick() and observe() under one lock
// (the gateway's) or from one thread (the simulator). The rows are immutable.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.hpp"

namespace tessera {

class CostModel;

// The Inference Extension's objectives in two levels: a critical request is never shed
// proactively (it goes to the backend with the most headroom even when that is negative);
// a sheddable one is shed when no backend can meet its TTFT SLO.
enum class LlmPriority { kCritical, kSheddable };

// One request as the router sees it.
struct LlmRouteRequest {
  uint32_t prompt_tokens = 0;  // estimated by the gateway (llm_estimated_tokens)
  // Chained hashes of the prompt's leading blocks (llm_prefix_hashes): [i] covers blocks
  // 0..i, so equal prefixes give equal hashes. Empty: none.
  std::span<const uint64_t> prefix_hashes;
  uint64_t session_key = 0;  // a client's session (hashed header); 0: none. Wins over prefix.
  LlmPriority priority = LlmPriority::kSheddable;
  Time ttft_slo = 0;  // seconds; 0: none
  Time tpot_slo = 0;  // seconds; 0: none
};

// One backend's state at the call, owned by the caller.
struct LlmRouteBackend {
  bool up = false;                      // in service
  int outstanding = 0;                  // this caller's requests in flight on it
  int awaiting_first = 0;               // of those, not yet given their first token
  uint64_t awaiting_prompt_tokens = 0;  // their prompt tokens
  // The engine's own gauges at the last scrape (vLLM's num_requests_running/waiting,
  // kv_cache_usage_perc); load_known false when none was read (or the last read failed).
  bool load_known = false;
  double running = 0, waiting = 0, kv_usage = 0;
};

// What `slo_aware` predicted for a request on the backend it chose: raw (the cost model's)
// and calibrated values, for observe().
struct LlmRoutePrediction {
  Time raw_ttft = -1, raw_tpot = -1;  // < 0: no prediction made
  Time ttft = -1, tpot = -1;          // calibrated
};

struct LlmRouteDecision {
  enum class Kind { kRoute, kNoBackend, kShed };
  Kind kind = Kind::kNoBackend;
  int backend = -1;      // kRoute: index into the backends
  std::string reason;    // kShed: why (names the SLO and the best prediction)
  Time retry_after = 0;  // kShed: a hint, seconds until a backend may meet the SLO
  LlmRoutePrediction prediction;
};

// A request that ended after its first token, on the backend it was routed to. A streamed
// one gives its TTFT and TPOT; a whole (non-streamed) one only its total time and, from its
// `usage`, its output tokens: `slo_aware` then splits the total as TTFT + (n - 1) x TPOT in
// the ratio of its own calibrated prediction for the request (docs/llm-gateway.md).
struct LlmRouteObservation {
  int backend = -1;
  LlmRoutePrediction prediction;  // the decision's
  Time ttft = -1;                 // measured; < 0: not measured
  Time tpot = -1;                 // measured; < 0: not measured (one token)
  uint32_t prompt_tokens = 0;
  uint32_t output_tokens = 0;  // 0: unknown
  Time total = -1;             // measured request to last byte; used only when ttft < 0
};

// The token counts at which sample_step_cost samples a cost model's prefill and KV-read
// curves.
inline constexpr std::array<double, 8> kLlmStepCostGrid{1, 16, 64, 256, 1024, 4096, 16384, 65536};

// A time as a function of tokens, through (0, 0) and (kLlmStepCostGrid[k], at[k]): linear
// between the points, the last segment's slope beyond the last, never below 0.
struct LlmCostCurve {
  std::array<Time, kLlmStepCostGrid.size()> at{};
  std::array<Time, kLlmStepCostGrid.size()> slope{};  // of the segment ending at point k

  static LlmCostCurve through(const std::array<Time, kLlmStepCostGrid.size()>& at);
  Time operator()(double tokens) const {
    if (!(tokens > 0)) return 0;
    std::size_t k = 0;  // the segment ending at the first point at or above `tokens`
    for (std::size_t i = 0; i + 1 < kLlmStepCostGrid.size(); ++i) k += tokens > kLlmStepCostGrid[i];
    const Time t = at[k] + slope[k] * (tokens - kLlmStepCostGrid[k]);
    return t > 0 ? t : 0;
  }
};

// A backend's step time, sampled from its cost model: a step of p prefill tokens reading
// c KV tokens takes step + prefill_time(p) + context_time(c). Given only the three
// coefficients (`sampled` false), the two are linear, p * prefill_token and
// c * context_token. Sampled (sample_step_cost), they follow the model's own curves at
// kLlmStepCostGrid, so a measured or quadratic prefill is predicted at the request's own
// length, not at one cost per token; the coefficients are then the curves' costs per token
// at 4,096 tokens (exact for the analytic model, which is linear).
struct LlmStepCost {
  Time step = 0;
  Time prefill_token = 0;
  Time context_token = 0;
  bool sampled = false;
  LlmCostCurve prefill{};
  LlmCostCurve context{};

  Time prefill_time(double tokens) const {
    return sampled ? prefill(tokens) : tokens > 0 ? tokens * prefill_token : 0.0;
  }
  Time context_time(double tokens) const {
    return sampled ? context(tokens) : tokens > 0 ? tokens * context_token : 0.0;
  }
};
LlmStepCost sample_step_cost(const CostModel& cost);

// The policies' parameters (the gateway spec's `gateway:` fields).
struct LlmRoutingConfig {
  // prefix_affinity: how many leading blocks make the key; the bounded-load factor c
  // (Mirrokni et al.: a backend takes a new request only while its load < ceil(c * m / n));
  // points per backend on the hash ring.
  int affinity_blocks = 4;
  double affinity_load_factor = 1.25;
  int ring_points = 64;
  // slo_aware: the output length assumed until requests have been observed; the weight
  // of each observation in the calibration (an exponential moving average of log ratios).
  uint32_t default_output_tokens = 128;
  double calibration_weight = 0.1;
};

class LlmRouter {
 public:
  virtual ~LlmRouter() = default;
  // `backends` is the same fleet (same size, same order) on every call; `now` is the
  // caller's clock (seconds; virtual in the simulator; no row reads it yet). Never throws.
  // Deterministic: the same calls in the same order give the same decisions.
  virtual LlmRouteDecision pick(const LlmRouteRequest& request,
                                std::span<const LlmRouteBackend> backends,
                                std::span<const int> skip, Time now) = 0;
  // A routed request ended after its first token; the default ignores it.
  virtual void observe(const LlmRouteObservation& /*observation*/) {}
};

// What a factory builds a router from: the config and each backend's step cost (index =
// the backend's; may be empty for policies that do not predict).
struct LlmRouterSetup {
  LlmRoutingConfig config;
  std::vector<LlmStepCost> step_costs;
};

struct LlmRoutingRow {
  std::string_view name;
  std::string_view summary;
  bool reads_engine_load = false;  // the caller should scrape the engines' gauges
  std::unique_ptr<LlmRouter> (*make)(const LlmRouterSetup& setup) = nullptr;
};

// round_robin, least_outstanding, kv_load, prefix_affinity, slo_aware (docs order).
std::span<const LlmRoutingRow> llm_routing_policies();
const LlmRoutingRow* find_llm_routing(std::string_view name);  // nullptr: none
std::vector<std::string> llm_routing_names();

// The gateway's estimates from a prompt's text (it has no tokenizer of the backend's
// model): about 4 bytes per token, and blocks of block_tokens * 4 bytes.
inline constexpr uint32_t kLlmBytesPerToken = 4;
uint32_t llm_estimated_tokens(std::size_t prompt_bytes);
// Chained 64-bit FNV-1a hashes of the text's first `max_blocks` whole blocks of
// `block_bytes` each; a text shorter than one block gives one hash of all of it; "" none.
std::vector<uint64_t> llm_prefix_hashes(std::string_view text, std::size_t block_bytes,
                                        std::size_t max_blocks);
uint64_t llm_hash(std::string_view text);  // 64-bit FNV-1a (never 0)

}  // namespace tessera
