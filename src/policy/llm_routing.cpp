#include "policy/llm_routing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "engine/cost_model.hpp"
#include "engine/worker.hpp"

namespace tessera {
namespace {

bool skipped(std::span<const int> skip, std::size_t i) {
  return std::find(skip.begin(), skip.end(), static_cast<int>(i)) != skip.end();
}

LlmRouteDecision route_to(int backend) {
  LlmRouteDecision d;
  if (backend >= 0) {
    d.kind = LlmRouteDecision::Kind::kRoute;
    d.backend = backend;
  }
  return d;
}

// The policies that scan the backends in turn from a cursor (the one after the last
// pick), so ties go round: `better(a, b)` says backend a beats the best so far b.
template <typename Better>
int scan_in_turn(std::size_t& next, std::span<const LlmRouteBackend> backends,
                 std::span<const int> skip, bool first_wins, const Better& better) {
  const std::size_t n = backends.size();
  int best = -1;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next + k) % n;
    if (!backends[i].up || skipped(skip, i)) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      if (first_wins) break;
    } else if (better(backends[i], backends[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(i);
    }
  }
  if (best >= 0) next = static_cast<std::size_t>(best) + 1;
  return best;
}

class RoundRobin final : public LlmRouter {
 public:
  LlmRouteDecision pick(const LlmRouteRequest&, std::span<const LlmRouteBackend> backends,
                        std::span<const int> skip, Time) override {
    return route_to(
        scan_in_turn(next_, backends, skip, true,
                     [](const LlmRouteBackend&, const LlmRouteBackend&) { return false; }));
  }

 private:
  std::size_t next_ = 0;
};

class LeastOutstanding final : public LlmRouter {
 public:
  LlmRouteDecision pick(const LlmRouteRequest&, std::span<const LlmRouteBackend> backends,
                        std::span<const int> skip, Time) override {
    return route_to(scan_in_turn(next_, backends, skip, false,
                                 [](const LlmRouteBackend& a, const LlmRouteBackend& b) {
                                   return a.outstanding < b.outstanding;
                                 }));
  }

 private:
  std::size_t next_ = 0;
};

// kv_load's order (smaller first): the requests the engine had waiting at the last scrape
// plus those the caller has in flight on it now, then its KV-cache usage. An engine whose
// load is unknown counts as full (usage 1).
std::pair<double, double> kv_load_key(const LlmRouteBackend& b) {
  const double waiting = b.load_known ? b.waiting : 0.0;
  return {waiting + b.outstanding, b.load_known ? b.kv_usage : 1.0};
}

class KvLoad final : public LlmRouter {
 public:
  LlmRouteDecision pick(const LlmRouteRequest&, std::span<const LlmRouteBackend> backends,
                        std::span<const int> skip, Time) override {
    return route_to(scan_in_turn(next_, backends, skip, false,
                                 [](const LlmRouteBackend& a, const LlmRouteBackend& b) {
                                   return kv_load_key(a) < kv_load_key(b);
                                 }));
  }

 private:
  std::size_t next_ = 0;
};

template <typename Router>
std::unique_ptr<LlmRouter> make_plain(const LlmRouterSetup&) {
  return std::make_unique<Router>();
}

const std::array<LlmRoutingRow, 3> kRows{{
    {"round_robin", "in turn over the backends in service", false, &make_plain<RoundRobin>},
    {"least_outstanding", "the fewest requests in flight on it; ties in turn", false,
     &make_plain<LeastOutstanding>},
    {"kv_load",
     "the fewest requests waiting at the engine (its vLLM gauges) plus in flight, then the "
     "emptier KV cache; ties in turn",
     true, &make_plain<KvLoad>},
}};

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv1a(uint64_t h, std::string_view text) {
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace

LlmStepCost sample_step_cost(const CostModel& cost) {
  // Three steps: an empty one, one that prefills, one that reads a KV cache.
  constexpr uint64_t kTokens = 4096;
  const Worker worker;
  StepContents empty;
  StepContents prefill;
  prefill.tokens_in = kTokens;
  StepContents decode;
  decode.context_tokens = kTokens;
  const Time base = cost.step_time(worker, empty);
  LlmStepCost s;
  s.step = std::max(0.0, base);
  s.prefill_token = std::max(0.0, (cost.step_time(worker, prefill) - base) / double(kTokens));
  s.context_token = std::max(0.0, (cost.step_time(worker, decode) - base) / double(kTokens));
  return s;
}

std::span<const LlmRoutingRow> llm_routing_policies() { return kRows; }

const LlmRoutingRow* find_llm_routing(std::string_view name) {
  for (const LlmRoutingRow& r : kRows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::vector<std::string> llm_routing_names() {
  std::vector<std::string> out;
  for (const LlmRoutingRow& r : kRows) out.emplace_back(r.name);
  return out;
}

uint32_t llm_estimated_tokens(std::size_t prompt_bytes) {
  const std::size_t t = (prompt_bytes + kLlmBytesPerToken - 1) / kLlmBytesPerToken;
  return static_cast<uint32_t>(std::min<std::size_t>(t, UINT32_MAX));
}

uint64_t llm_hash(std::string_view text) {
  const uint64_t h = fnv1a(kFnvOffset, text);
  return h == 0 ? 1 : h;
}

std::vector<uint64_t> llm_prefix_hashes(std::string_view text, std::size_t block_bytes,
                                        std::size_t max_blocks) {
  std::vector<uint64_t> out;
  if (text.empty() || max_blocks == 0) return out;
  if (block_bytes == 0 || text.size() < block_bytes) {
    out.push_back(llm_hash(text));
    return out;
  }
  uint64_t h = kFnvOffset;
  for (std::size_t b = 0; b < max_blocks && (b + 1) * block_bytes <= text.size(); ++b) {
    h = fnv1a(h, text.substr(b * block_bytes, block_bytes));
    out.push_back(h == 0 ? 1 : h);
  }
  return out;
}

}  // namespace tessera
