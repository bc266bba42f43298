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

// A policy that scans in turn and keeps the backend `Better` prefers (the first one in
// service when kFirstWins).
template <bool kFirstWins, typename Better>
class InTurn final : public LlmRouter {
 public:
  LlmRouteDecision pick(const LlmRouteRequest&, std::span<const LlmRouteBackend> backends,
                        std::span<const int> skip, Time) override {
    return route_to(scan_in_turn(next_, backends, skip, kFirstWins, Better{}));
  }

 private:
  std::size_t next_ = 0;
};

struct NoneBetter {
  bool operator()(const LlmRouteBackend&, const LlmRouteBackend&) const { return false; }
};

struct FewerOutstanding {
  bool operator()(const LlmRouteBackend& a, const LlmRouteBackend& b) const {
    return a.outstanding < b.outstanding;
  }
};

// kv_load's order (smaller first): the requests the engine had waiting at the last scrape
// plus those the caller has in flight on it now, then its KV-cache usage. An engine whose
// load is unknown counts as full (usage 1).
std::pair<double, double> kv_load_key(const LlmRouteBackend& b) {
  const double waiting = b.load_known ? b.waiting : 0.0;
  return {waiting + b.outstanding, b.load_known ? b.kv_usage : 1.0};
}

struct LessKvLoad {
  bool operator()(const LlmRouteBackend& a, const LlmRouteBackend& b) const {
    return kv_load_key(a) < kv_load_key(b);
  }
};

using RoundRobin = InTurn<true, NoneBetter>;
using LeastOutstanding = InTurn<false, FewerOutstanding>;
using KvLoad = InTurn<false, LessKvLoad>;

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser: spreads a key over the ring
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The request's affinity key: its session, else the hash of its first `blocks` leading
// blocks (fewer when the prompt has fewer); 0 when it has neither.
uint64_t affinity_key(const LlmRouteRequest& r, int blocks) {
  if (r.session_key != 0) return r.session_key;
  if (r.prefix_hashes.empty() || blocks <= 0) return 0;
  const std::size_t k = std::min(r.prefix_hashes.size(), static_cast<std::size_t>(blocks));
  return r.prefix_hashes[k - 1];
}

// Consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam, SODA 2018):
// backends are points on a ring (ring_points each); a request's key hashes onto the ring
// and goes to the first backend clockwise whose load is below the capacity
// ceil(c * m / n), where m is the requests in flight including this one, n the backends
// that may take it and c = affinity_load_factor (the paper's 1 + epsilon). Requests
// without a key go to the least outstanding backend.
class PrefixAffinity final : public LlmRouter {
 public:
  explicit PrefixAffinity(const LlmRoutingConfig& config) : config_(config) {}

  LlmRouteDecision pick(const LlmRouteRequest& request, std::span<const LlmRouteBackend> backends,
                        std::span<const int> skip, Time now) override {
    const uint64_t key = affinity_key(request, config_.affinity_blocks);
    if (key == 0) return fallback_.pick(request, backends, skip, now);
    if (ring_backends_ != backends.size()) build_ring(backends.size());
    long in_flight = 1;
    long eligible = 0;
    for (std::size_t i = 0; i < backends.size(); ++i) {
      if (!backends[i].up || skipped(skip, i)) continue;
      ++eligible;
      in_flight += std::max(0, backends[i].outstanding);
    }
    if (eligible == 0) return route_to(-1);
    const double capacity =
        std::ceil(config_.affinity_load_factor * double(in_flight) / double(eligible));
    const uint64_t at = mix64(key);
    auto it = std::lower_bound(ring_.begin(), ring_.end(), std::pair{at, uint32_t{0}});
    for (std::size_t k = 0; k < ring_.size(); ++k, ++it) {
      if (it == ring_.end()) it = ring_.begin();
      const std::size_t i = it->second;
      const LlmRouteBackend& b = backends[i];
      if (b.up && !skipped(skip, i) && double(b.outstanding) < capacity) {
        return route_to(static_cast<int>(i));
      }
    }
    return route_to(-1);  // not reached: some eligible backend is below capacity
  }

 private:
  void build_ring(std::size_t n) {
    ring_.clear();
    const int points = std::max(1, config_.ring_points);
    for (std::size_t i = 0; i < n; ++i) {
      for (int j = 0; j < points; ++j) {
        ring_.emplace_back(mix64((uint64_t(i) << 20) ^ uint64_t(j)), static_cast<uint32_t>(i));
      }
    }
    std::sort(ring_.begin(), ring_.end());
    ring_backends_ = n;
  }

  LlmRoutingConfig config_;
  std::vector<std::pair<uint64_t, uint32_t>> ring_;  // (point, backend), sorted
  std::size_t ring_backends_ = 0;
  LeastOutstanding fallback_;
};

// tessera's SLO-aware routing (docs/llm-gateway.md#slo-aware-routing): predicts the
// request's TTFT and TPOT on every backend from the requests ahead of it there and the
// backend's own step cost, scaled by a per-backend factor learnt from the TTFTs and TPOTs
// observed; picks the largest relative headroom; sheds a sheddable request no backend can
// serve within its TTFT SLO.
class SloAware final : public LlmRouter {
 public:
  explicit SloAware(const LlmRouterSetup& setup)
      : config_(setup.config),
        costs_(setup.step_costs),
        mean_output_(double(std::max<uint32_t>(1, setup.config.default_output_tokens))) {}

  LlmRouteDecision pick(const LlmRouteRequest& request, std::span<const LlmRouteBackend> backends,
                        std::span<const int> skip, Time) override {
    if (scales_.size() != backends.size()) scales_.resize(backends.size());
    const double prompt = double(request.prompt_tokens);
    const double mean_prompt = observed_ > 0 ? mean_prompt_ : prompt;
    const std::size_t n = backends.size();
    int best = -1, best_meeting = -1;
    double best_score = 0, best_meeting_score = 0;
    LlmRoutePrediction best_p, best_meeting_p;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (next_ + k) % n;
      const LlmRouteBackend& b = backends[i];
      if (!b.up || skipped(skip, i)) continue;
      const LlmRoutePrediction p = predict(i, b, prompt, mean_prompt);
      const double score = headroom(request, p);
      if (best < 0 || score > best_score) {
        best = static_cast<int>(i);
        best_score = score;
        best_p = p;
      }
      const bool meets = request.ttft_slo <= 0 || p.ttft <= request.ttft_slo;
      if (meets && (best_meeting < 0 || score > best_meeting_score)) {
        best_meeting = static_cast<int>(i);
        best_meeting_score = score;
        best_meeting_p = p;
      }
    }
    if (best < 0) return route_to(-1);
    int chosen = best_meeting;
    LlmRoutePrediction chosen_p = best_meeting_p;
    if (chosen < 0) {
      if (request.priority == LlmPriority::kSheddable) {
        LlmRouteDecision d;
        d.kind = LlmRouteDecision::Kind::kShed;
        d.reason = fmt::format(
            "no backend can meet the TTFT SLO of {:.0f} ms: the best predicted TTFT is {:.0f} "
            "ms",
            to_ms(request.ttft_slo), to_ms(best_p.ttft));
        d.retry_after = std::clamp(best_p.ttft - request.ttft_slo, 1.0, 60.0);
        d.prediction = best_p;
        return d;
      }
      chosen = best;  // critical: never shed, the most headroom there is
      chosen_p = best_p;
    }
    next_ = static_cast<std::size_t>(chosen) + 1;
    LlmRouteDecision d = route_to(chosen);
    d.prediction = chosen_p;
    return d;
  }

  void observe(const LlmRouteObservation& o) override {
    const double w = std::clamp(config_.calibration_weight, 0.0, 1.0);
    if (o.prompt_tokens > 0) {
      mean_prompt_ = observed_ == 0 ? double(o.prompt_tokens)
                                    : (1 - w) * mean_prompt_ + w * double(o.prompt_tokens);
      ++observed_;
    }
    if (o.output_tokens > 0) mean_output_ = (1 - w) * mean_output_ + w * double(o.output_tokens);
    if (o.backend < 0 || static_cast<std::size_t>(o.backend) >= scales_.size()) return;
    Scales& s = scales_[static_cast<std::size_t>(o.backend)];
    Time ttft = o.ttft, tpot = o.tpot;
    if (!(ttft > 0)) split_total(o, ttft, tpot);
    learn(s.log_ttft, s.ttft, o.prediction.raw_ttft, ttft, w);
    learn(s.log_tpot, s.tpot, o.prediction.raw_tpot, tpot, w);
  }

 private:
  struct Scales {
    double log_ttft = 0, log_tpot = 0;  // the moving averages of log(measured / raw)
    double ttft = 1, tpot = 1;          // exp of them
  };

  // A whole answer's total time, split as TTFT + (n - 1) x TPOT in the ratio of the
  // calibrated prediction: the one equation moves both factors by the same ratio
  // (total / predicted total), leaving the predicted TTFT : TPOT ratio as it was. n is the
  // answer's `usage` tokens, else the mean observed. Leaves ttft and tpot < 0 when the
  // total or the prediction is missing.
  void split_total(const LlmRouteObservation& o, Time& ttft, Time& tpot) const {
    const LlmRoutePrediction& p = o.prediction;
    if (!(o.total > 0) || !std::isfinite(o.total) || !(p.ttft > 0) || !std::isfinite(p.ttft)) {
      return;
    }
    const double n =
        o.output_tokens > 0 ? double(o.output_tokens) : std::max(1.0, std::round(mean_output_));
    const bool decoded = n > 1 && p.tpot > 0 && std::isfinite(p.tpot);
    const double predicted = p.ttft + (decoded ? (n - 1) * p.tpot : 0.0);
    const double ratio = o.total / predicted;
    ttft = p.ttft * ratio;
    tpot = decoded ? p.tpot * ratio : -1.0;
  }

  static void learn(double& log_scale, double& scale, Time raw, Time measured, double w) {
    if (!(raw > 0) || !(measured > 0) || !std::isfinite(raw) || !std::isfinite(measured)) return;
    const double ratio = std::clamp(measured / raw, 1.0 / 64, 64.0);
    log_scale = (1 - w) * log_scale + w * std::log(ratio);
    scale = std::exp(log_scale);
  }

  LlmRoutePrediction predict(std::size_t i, const LlmRouteBackend& b, double prompt,
                             double mean_prompt) const {
    static const LlmStepCost kUnknown;
    const LlmStepCost& c = i < costs_.size() ? costs_[i] : kUnknown;
    // The requests ahead: those waiting for their first token (the engine's count when it
    // reports more, the rest of average length), and the running batch's decoders.
    const double awaiting = std::max(0, b.awaiting_first);
    const double decoding =
        std::max({0.0, double(b.outstanding) - awaiting, b.load_known ? b.running : 0.0});
    const double waiting = std::max(awaiting, b.load_known ? b.waiting : 0.0);
    const double ahead_tokens =
        double(b.awaiting_prompt_tokens) + (waiting - awaiting) * mean_prompt;
    const double context_per_request = mean_prompt + mean_output_ / 2;
    const double decode_read = c.context_time(decoding * context_per_request);
    // The prefills ahead, each at the mean length of those ahead, and its own at its length.
    const double ahead_prefill = waiting > 0 ? waiting * c.prefill_time(ahead_tokens / waiting) : 0;
    LlmRoutePrediction p;
    // One prefill step per request ahead and its own, each also reading the running
    // batch's KV cache.
    p.raw_ttft = (waiting + 1) * (c.step + decode_read) + ahead_prefill + c.prefill_time(prompt);
    // A decode step with everyone in it, plus the prefills ahead spread over its output.
    p.raw_tpot = c.step + c.context_time((decoding + waiting + 1) * context_per_request) +
                 ahead_prefill / std::max(1.0, mean_output_);
    const Scales s = i < scales_.size() ? scales_[i] : Scales{};
    p.ttft = p.raw_ttft * s.ttft;
    p.tpot = p.raw_tpot * s.tpot;
    return p;
  }

  // The relative headroom under the request's SLOs (the smaller of the two); with none,
  // minus the predicted TTFT.
  static double headroom(const LlmRouteRequest& r, const LlmRoutePrediction& p) {
    const bool ttft = r.ttft_slo > 0, tpot = r.tpot_slo > 0;
    if (!ttft && !tpot) return -p.ttft;
    double h = std::numeric_limits<double>::infinity();
    if (ttft) h = std::min(h, 1 - p.ttft / r.ttft_slo);
    if (tpot) h = std::min(h, 1 - p.tpot / r.tpot_slo);
    return h;
  }

  LlmRoutingConfig config_;
  std::vector<LlmStepCost> costs_;
  std::vector<Scales> scales_;
  double mean_prompt_ = 0;
  double mean_output_;
  uint64_t observed_ = 0;
  std::size_t next_ = 0;
};

template <typename Router>
std::unique_ptr<LlmRouter> make_plain(const LlmRouterSetup&) {
  return std::make_unique<Router>();
}

std::unique_ptr<LlmRouter> make_prefix_affinity(const LlmRouterSetup& setup) {
  return std::make_unique<PrefixAffinity>(setup.config);
}

std::unique_ptr<LlmRouter> make_slo_aware(const LlmRouterSetup& setup) {
  return std::make_unique<SloAware>(setup);
}

const std::array<LlmRoutingRow, 5> kRows{{
    {"round_robin", "in turn over the backends in service", false, &make_plain<RoundRobin>},
    {"least_outstanding", "the fewest requests in flight on it; ties in turn", false,
     &make_plain<LeastOutstanding>},
    {"kv_load",
     "the fewest requests waiting at the engine (its vLLM gauges) plus in flight, then the "
     "emptier KV cache; ties in turn",
     true, &make_plain<KvLoad>},
    {"prefix_affinity",
     "the prompt's leading blocks (or its session) hashed onto a ring, bounded-load "
     "consistent hashing: the first backend clockwise below ceil(c * m / n) in flight",
     false, &make_prefix_affinity},
    {"slo_aware",
     "tessera's: each backend's TTFT and TPOT predicted from its queue, running batch and "
     "step cost, calibrated online; the largest headroom; sheds a sheddable request no "
     "backend can serve within its TTFT SLO",
     true, &make_slo_aware},
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

LlmCostCurve LlmCostCurve::through(const std::array<Time, kLlmStepCostGrid.size()>& at) {
  LlmCostCurve c;
  c.at = at;
  for (std::size_t k = 0; k < at.size(); ++k) {
    const double from_tokens = k == 0 ? 0.0 : kLlmStepCostGrid[k - 1];
    const Time from_time = k == 0 ? 0.0 : at[k - 1];
    c.slope[k] = (at[k] - from_time) / (kLlmStepCostGrid[k] - from_tokens);
  }
  return c;
}

LlmStepCost sample_step_cost(const CostModel& cost) {
  // An empty step, then steps that prefill, or read a KV cache of, each grid size.
  const Worker worker;
  const Time base = cost.step_time(worker, StepContents{});
  std::array<Time, kLlmStepCostGrid.size()> prefill{}, context{};
  for (std::size_t k = 0; k < kLlmStepCostGrid.size(); ++k) {
    const auto tokens = static_cast<uint64_t>(kLlmStepCostGrid[k]);
    StepContents prefill_step;
    prefill_step.tokens_in = tokens;
    StepContents decode_step;
    decode_step.context_tokens = tokens;
    prefill[k] = std::max(0.0, cost.step_time(worker, prefill_step) - base);
    context[k] = std::max(0.0, cost.step_time(worker, decode_step) - base);
  }
  LlmStepCost s;
  s.step = std::max(0.0, base);
  s.sampled = true;
  s.prefill = LlmCostCurve::through(prefill);
  s.context = LlmCostCurve::through(context);
  constexpr std::size_t kPerTokenAt = 5;  // 4,096 tokens
  s.prefill_token = prefill[kPerTokenAt] / kLlmStepCostGrid[kPerTokenAt];
  s.context_token = context[kPerTokenAt] / kLlmStepCostGrid[kPerTokenAt];
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
