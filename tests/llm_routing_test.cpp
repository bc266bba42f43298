// The LLM routing policies (src/policy/llm_routing.*) on injected backend state and time:
// no sockets, no clocks, no sleeps.

#include "policy/llm_routing.hpp"

#include "engine/cost_model.hpp"
#include "engine/worker.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace tessera {
namespace {

std::unique_ptr<LlmRouter> make_router(std::string_view name, LlmRouterSetup setup = {}) {
  const LlmRoutingRow* row = find_llm_routing(name);
  EXPECT_NE(row, nullptr) << name;
  return row->make(setup);
}

std::vector<LlmRouteBackend> fleet(int n) {
  std::vector<LlmRouteBackend> b(static_cast<std::size_t>(n));
  for (auto& x : b) x.up = true;
  return b;
}

int pick(LlmRouter& r, const std::vector<LlmRouteBackend>& backends, std::vector<int> skip = {},
         const LlmRouteRequest& request = {}) {
  const LlmRouteDecision d = r.pick(request, backends, skip, 0.0);
  if (d.kind != LlmRouteDecision::Kind::kRoute) return -1;
  return d.backend;
}

TEST(LlmRouting, RowsAreListedInOrderAndFoundByName) {
  const std::vector<std::string> names = llm_routing_names();
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "round_robin");
  EXPECT_EQ(names[1], "least_outstanding");
  EXPECT_EQ(names[2], "kv_load");
  EXPECT_EQ(find_llm_routing("nope"), nullptr);
  for (const LlmRoutingRow& row : llm_routing_policies()) {
    EXPECT_FALSE(row.summary.empty()) << row.name;
    ASSERT_NE(row.make, nullptr) << row.name;
    EXPECT_NE(row.make({}), nullptr) << row.name;
  }
  EXPECT_TRUE(find_llm_routing("kv_load")->reads_engine_load);
  EXPECT_FALSE(find_llm_routing("round_robin")->reads_engine_load);
}

TEST(LlmRouting, RoundRobinGoesInTurnOverTheBackendsInService) {
  auto r = make_router("round_robin");
  auto b = fleet(3);
  EXPECT_EQ(pick(*r, b), 0);
  EXPECT_EQ(pick(*r, b), 1);
  EXPECT_EQ(pick(*r, b), 2);
  EXPECT_EQ(pick(*r, b), 0);
  b[1].up = false;
  EXPECT_EQ(pick(*r, b), 2);
  EXPECT_EQ(pick(*r, b), 0);
  EXPECT_EQ(pick(*r, b, {2}), 0);  // skipped: the next one in service
}

TEST(LlmRouting, NoBackendWhenNoneIsInServiceOrAllAreSkipped) {
  for (const LlmRoutingRow& row : llm_routing_policies()) {
    auto r = row.make({});
    auto b = fleet(2);
    EXPECT_EQ(pick(*r, b, {0, 1}), -1) << row.name;
    b[0].up = b[1].up = false;
    const LlmRouteDecision d = r->pick({}, b, {}, 0.0);
    EXPECT_EQ(d.kind, LlmRouteDecision::Kind::kNoBackend) << row.name;
    EXPECT_EQ(d.backend, -1) << row.name;
    EXPECT_EQ(pick(*r, {}), -1) << row.name;  // an empty fleet
  }
}

TEST(LlmRouting, LeastOutstandingTakesTheFewestInFlightTiesInTurn) {
  auto r = make_router("least_outstanding");
  auto b = fleet(3);
  b[0].outstanding = 2;
  b[1].outstanding = 1;
  b[2].outstanding = 1;
  EXPECT_EQ(pick(*r, b), 1);
  EXPECT_EQ(pick(*r, b), 2);  // the tie goes round from the last pick
  EXPECT_EQ(pick(*r, b), 1);
  b[0].outstanding = 0;
  EXPECT_EQ(pick(*r, b), 0);
  EXPECT_EQ(pick(*r, b, {0}), 1);
}

TEST(LlmRouting, KvLoadTakesTheShortestQueueThenTheEmptierCacheUnknownLoadLast) {
  auto r = make_router("kv_load");
  auto b = fleet(3);
  b[0].load_known = b[1].load_known = true;
  b[0].waiting = 3;
  b[0].kv_usage = 0.1;
  b[1].waiting = 1;
  b[1].kv_usage = 0.9;
  // b[2]: unknown load counts as a full cache, its queue as empty.
  b[1].outstanding = 0;
  b[2].outstanding = 1;
  EXPECT_EQ(pick(*r, b), 1);  // 1 waiting + 0 < 0 + 1 (unknown, full) < 3
  b[1].outstanding = 1;       // 2 vs (1, full) vs 3: the unknown one now
  EXPECT_EQ(pick(*r, b), 2);
  b[2].outstanding = 2;  // 2 vs 2 (full cache) vs 3: the emptier cache
  EXPECT_EQ(pick(*r, b), 1);
}

TEST(LlmRouting, PrefixHashesAreChainedOverWholeBlocks) {
  const auto a = llm_prefix_hashes("aaaabbbbcc", 4, 8);
  ASSERT_EQ(a.size(), 2u);  // two whole blocks; the partial third is left out
  const auto b = llm_prefix_hashes("aaaabbbbdd", 4, 8);
  EXPECT_EQ(a, b);
  const auto c = llm_prefix_hashes("aaaaxbbb", 4, 8);
  EXPECT_EQ(a[0], c[0]);
  EXPECT_NE(a[1], c[1]);
  EXPECT_EQ(llm_prefix_hashes("aaaabbbbcccc", 4, 1).size(), 1u);
  EXPECT_EQ(llm_prefix_hashes("ab", 4, 8).size(), 1u);  // shorter than a block: all of it
  EXPECT_TRUE(llm_prefix_hashes("", 4, 8).empty());
  EXPECT_EQ(llm_estimated_tokens(0), 0u);
  EXPECT_EQ(llm_estimated_tokens(9), 3u);
  EXPECT_NE(llm_hash(""), 0u);
}

// ---- prefix_affinity ----

LlmRouterSetup affinity_setup(double load_factor = 1.25) {
  LlmRouterSetup s;
  s.config.affinity_load_factor = load_factor;
  return s;
}

// A request keyed by `prefix` (one block).
struct Keyed {
  explicit Keyed(const std::string& prefix) : hashes(llm_prefix_hashes(prefix, 64, 4)) {
    request.prefix_hashes = hashes;
  }
  std::vector<uint64_t> hashes;
  LlmRouteRequest request;
};

TEST(LlmRoutingPrefixAffinity, TheSamePrefixGoesToTheSameBackendAndKeysSpread) {
  auto r = make_router("prefix_affinity", affinity_setup());
  const auto b = fleet(4);
  std::vector<int> seen(4, 0);
  for (int k = 0; k < 400; ++k) {
    const Keyed q("system prompt number " + std::to_string(k));
    const int first = pick(*r, b, {}, q.request);
    ASSERT_GE(first, 0);
    ++seen[static_cast<std::size_t>(first)];
    for (int again = 0; again < 3; ++again) EXPECT_EQ(pick(*r, b, {}, q.request), first);
  }
  // 64 points per backend spread 400 keys: none gets fewer than half its share.
  for (int n : seen) EXPECT_GT(n, 50);
  // Only the leading blocks count: a different tail keeps the backend.
  std::string shared(64 * 4, 'x');
  const Keyed a(shared + "tail one"), c(shared + "another tail");
  EXPECT_EQ(pick(*r, b, {}, a.request), pick(*r, b, {}, c.request));
}

TEST(LlmRoutingPrefixAffinity, ABackendLeavingMovesOnlyItsOwnKeys) {
  auto r = make_router("prefix_affinity", affinity_setup());
  auto b = fleet(5);
  std::vector<int> before;
  for (int k = 0; k < 200; ++k) {
    before.push_back(pick(*r, b, {}, Keyed("key " + std::to_string(k)).request));
  }
  b[2].up = false;
  int moved = 0;
  for (int k = 0; k < 200; ++k) {
    const int now = pick(*r, b, {}, Keyed("key " + std::to_string(k)).request);
    EXPECT_NE(now, 2);
    if (before[static_cast<std::size_t>(k)] != 2) {
      EXPECT_EQ(now, before[static_cast<std::size_t>(k)]) << "key " << k;
    } else {
      ++moved;
    }
  }
  EXPECT_GT(moved, 0);
  // A retry skips the backend tried; the key's next choice is the same each time.
  const Keyed q("key 7");
  const int home = pick(*r, b, {}, q.request);
  const int second = pick(*r, b, {home}, q.request);
  EXPECT_NE(second, home);
  EXPECT_EQ(pick(*r, b, {home}, q.request), second);
}

TEST(LlmRoutingPrefixAffinity, NoBackendTakesMoreThanTheBoundedLoadCapacity) {
  // One hot prefix, requests that stay in flight: the key's backend fills up to
  // ceil(c * m / n) and the rest overflow clockwise, never past the capacity anywhere.
  for (double c : {1.0, 1.25, 2.0}) {
    auto r = make_router("prefix_affinity", affinity_setup(c));
    auto b = fleet(4);
    const Keyed hot("the one hot system prompt");
    const int home = pick(*r, b, {}, hot.request);
    long m = 0;
    for (int k = 0; k < 100; ++k) {
      const int i = pick(*r, b, {}, hot.request);
      ASSERT_GE(i, 0);
      ++m;  // this one, now in flight
      const double capacity = std::ceil(c * double(m) / 4.0);
      ++b[static_cast<std::size_t>(i)].outstanding;
      for (const auto& x : b) EXPECT_LE(double(x.outstanding), capacity) << "c=" << c;
    }
    EXPECT_EQ(b[static_cast<std::size_t>(home)].outstanding,
              static_cast<int>(std::ceil(c * 100 / 4.0)))
        << "the home backend is filled to its capacity first, c=" << c;
  }
}

TEST(LlmRoutingPrefixAffinity, TheSessionWinsAndRequestsWithoutAKeyGoToTheLeastLoaded) {
  auto r = make_router("prefix_affinity", affinity_setup());
  auto b = fleet(3);
  Keyed q("some prompt");
  q.request.session_key = llm_hash("session-42");
  const int by_session = pick(*r, b, {}, q.request);
  for (int k = 0; k < 20; ++k) {
    Keyed other("prompt " + std::to_string(k));
    other.request.session_key = q.request.session_key;
    EXPECT_EQ(pick(*r, b, {}, other.request), by_session);
  }
  b[0].outstanding = 3;
  b[1].outstanding = 1;
  b[2].outstanding = 2;
  EXPECT_EQ(pick(*r, b, {}, LlmRouteRequest{}), 1);
}

// ---- slo_aware ----

// Backend 0 fast, backend 1 four times slower; no KV read cost unless asked.
LlmRouterSetup slo_setup(double context_token = 0) {
  LlmRouterSetup s;
  s.step_costs = {{0.010, 0.001, context_token}, {0.040, 0.004, context_token}};
  return s;
}

LlmRouteRequest slo_request(double ttft_slo, double tpot_slo = 0,
                            LlmPriority priority = LlmPriority::kSheddable) {
  LlmRouteRequest r;
  r.prompt_tokens = 100;
  r.ttft_slo = ttft_slo;
  r.tpot_slo = tpot_slo;
  r.priority = priority;
  return r;
}

TEST(LlmRoutingSloAware, PredictsFromTheQueueAndTheStepCostAndTakesTheMostHeadroom) {
  auto r = make_router("slo_aware", slo_setup());
  auto b = fleet(2);
  LlmRouteDecision d = r->pick(slo_request(1.0), b, {}, 0.0);
  ASSERT_EQ(d.kind, LlmRouteDecision::Kind::kRoute);
  EXPECT_EQ(d.backend, 0);
  // An empty backend: one step and its own prompt, 0.010 + 100 * 0.001.
  EXPECT_NEAR(d.prediction.raw_ttft, 0.110, 1e-9);
  EXPECT_NEAR(d.prediction.ttft, 0.110, 1e-9);  // not calibrated yet
  // Two requests ahead with 400 prompt tokens: three steps, 500 tokens prefilled, 0.53 s;
  // the slow one, empty, 0.44 s.
  b[0].outstanding = b[0].awaiting_first = 2;
  b[0].awaiting_prompt_tokens = 400;
  d = r->pick(slo_request(1.0), b, {}, 0.0);
  EXPECT_EQ(d.backend, 1);
  EXPECT_NEAR(d.prediction.raw_ttft, 0.44, 1e-9);
  b[0].awaiting_prompt_tokens = 200;  // 0.33 s now
  EXPECT_EQ(r->pick(slo_request(1.0), b, {}, 0.0).backend, 0);
  // The engine's own gauges count too (other clients' requests waiting there).
  b[0] = LlmRouteBackend{};
  b[0].up = true;
  b[0].load_known = true;
  b[0].waiting = 5;
  EXPECT_EQ(r->pick(slo_request(1.0), b, {}, 0.0).backend, 1);
}

TEST(LlmRoutingSloAware, ShedsASheddableRequestNoBackendCanServeInTimeNeverACriticalOne) {
  auto r = make_router("slo_aware", slo_setup());
  auto b = fleet(2);
  for (auto& x : b) {
    x.outstanding = x.awaiting_first = 10;
    x.awaiting_prompt_tokens = 2000;
  }
  // Fast: 11 * 0.010 + 2100 * 0.001 = 2.21 s; slow: 8.84 s. SLO 0.5 s.
  const LlmRouteDecision shed = r->pick(slo_request(0.5), b, {}, 0.0);
  EXPECT_EQ(shed.kind, LlmRouteDecision::Kind::kShed);
  EXPECT_EQ(shed.backend, -1);
  EXPECT_NE(shed.reason.find("TTFT SLO of 500 ms"), std::string::npos) << shed.reason;
  EXPECT_NE(shed.reason.find("2210 ms"), std::string::npos) << shed.reason;
  EXPECT_NEAR(shed.retry_after, 1.71, 1e-9);
  const LlmRouteDecision critical =
      r->pick(slo_request(0.5, 0, LlmPriority::kCritical), b, {}, 0.0);
  EXPECT_EQ(critical.kind, LlmRouteDecision::Kind::kRoute);
  EXPECT_EQ(critical.backend, 0);
  // Without a TTFT SLO nothing is shed: the shortest predicted TTFT.
  EXPECT_EQ(r->pick(slo_request(0), b, {}, 0.0).backend, 0);
  // Skipping the only backend that could make it sheds too.
  b[0] = b[1] = LlmRouteBackend{};
  b[0].up = b[1].up = true;
  EXPECT_EQ(r->pick(slo_request(0.2), b, {}, 0.0).backend, 0);  // 0.11 s vs 0.44 s
  const std::vector<int> skip{0};
  EXPECT_EQ(r->pick(slo_request(0.2), b, skip, 0.0).kind, LlmRouteDecision::Kind::kShed);
}

TEST(LlmRoutingSloAware, TheTpotSloCountsInTheHeadroom) {
  // KV reads make a backend with a big running batch slow per token.
  auto r = make_router("slo_aware", slo_setup(1e-6));
  auto b = fleet(2);
  b[0].outstanding = 200;  // 200 decoding on the fast one
  // TPOT fast: 0.010 + 201 * (100 + 64) * 1e-6 = 0.0430; slow: 0.040 + 164e-6 = 0.0402.
  const LlmRouteDecision d = r->pick(slo_request(2.0, 0.05), b, {}, 0.0);
  EXPECT_EQ(d.backend, 1);
  EXPECT_NEAR(d.prediction.raw_tpot, 0.040 + 164e-6, 1e-9);
  // With the TTFT SLO alone the fast one has more headroom.
  EXPECT_EQ(r->pick(slo_request(2.0), b, {}, 0.0).backend, 0);
}

TEST(LlmRoutingSloAware, CalibratesEachBackendOnlineFromTheObservedLatencies) {
  auto r = make_router("slo_aware", slo_setup());
  const auto b = fleet(2);
  LlmRouteDecision d = r->pick(slo_request(1.0), b, {}, 0.0);
  ASSERT_EQ(d.backend, 0);
  // The fast backend is really 5x slower than its cost model says (a busy GPU, a
  // network hop): after enough observations the prediction follows, and the slow
  // backend (0.44 s) now has more headroom than the fast one (0.55 s).
  for (int k = 0; k < 60; ++k) {
    r->observe({0, d.prediction, 5 * d.prediction.raw_ttft, -1, 100, 0});
  }
  d = r->pick(slo_request(1.0), b, {}, 0.0);
  EXPECT_EQ(d.backend, 1);
  const std::vector<int> skip{1};
  const LlmRouteDecision on0 = r->pick(slo_request(1.0), b, skip, 0.0);
  // The log-ratio average after 60 observations of ln 5 with weight 0.1.
  EXPECT_NEAR(on0.prediction.ttft / on0.prediction.raw_ttft, std::pow(5.0, 1 - std::pow(0.9, 60)),
              1e-9);
  // Observations that cannot calibrate leave the scale alone: no prediction, NaN, a
  // backend out of range.
  LlmRoutePrediction none;
  r->observe({0, none, 0.3, 0.01, 100, 10});
  r->observe({0, on0.prediction, std::nan(""), -1, 0, 0});
  r->observe({7, on0.prediction, 1.0, 1.0, 0, 0});
  r->observe({-1, on0.prediction, 1.0, 1.0, 0, 0});
  const LlmRouteDecision again = r->pick(slo_request(1.0), b, skip, 0.0);
  EXPECT_NEAR(again.prediction.ttft / again.prediction.raw_ttft,
              on0.prediction.ttft / on0.prediction.raw_ttft, 1e-12);
}

TEST(LlmRoutingSloAware, AWholeAnswerCalibratesFromItsTotalTimeInThePredictedRatio) {
  auto r = make_router("slo_aware", slo_setup());
  const auto b = fleet(2);
  const std::vector<int> skip{1};
  const LlmRouteDecision d = r->pick(slo_request(1.0), b, skip, 0.0);
  ASSERT_EQ(d.backend, 0);
  ASSERT_GT(d.prediction.raw_ttft, 0);
  ASSERT_GT(d.prediction.raw_tpot, 0);
  // A non-streamed answer of 11 tokens that took 3x its predicted total: no TTFT, no TPOT.
  const Time total = 3 * (d.prediction.ttft + 10 * d.prediction.tpot);
  LlmRouteObservation o{0, d.prediction, -1, -1, 100, 11};
  o.total = total;
  r->observe(o);
  // Both factors move by the same ratio (one EMA step of ln 3 with weight 0.1).
  const LlmRouteDecision after = r->pick(slo_request(1.0), b, skip, 0.0);
  EXPECT_NEAR(after.prediction.ttft / after.prediction.raw_ttft, std::pow(3.0, 0.1), 1e-9);
  EXPECT_NEAR(after.prediction.tpot / after.prediction.raw_tpot, std::pow(3.0, 0.1), 1e-9);
  // No total, or a total with no prediction to split it by: nothing learnt.
  LlmRouteObservation none{0, d.prediction, -1, -1, 100, 11};
  r->observe(none);
  LlmRouteObservation unpredicted{0, LlmRoutePrediction{}, -1, -1, 100, 11};
  unpredicted.total = 1.0;
  r->observe(unpredicted);
  const LlmRouteDecision again = r->pick(slo_request(1.0), b, skip, 0.0);
  EXPECT_NEAR(again.prediction.ttft / again.prediction.raw_ttft, std::pow(3.0, 0.1), 1e-9);
}

// Two backends whose prefill curves cross: A is cheap on short prompts and quadratic in
// the prompt (attention-bound), B has a higher fixed cost and grows linearly. Sampled from
// their cost models, the router predicts each request at its own length: a short prompt
// goes to A and a long one to B. (One cost per token taken at 4,096 tokens, as the router
// had before, ranks A as the slower backend for every length and sends both to B.)
class CurveCost final : public CostModel {
 public:
  CurveCost(double fixed, double linear, double quadratic)
      : fixed_(fixed), linear_(linear), quadratic_(quadratic) {}
  Time step_time(const Worker&, const StepContents& step) const override {
    const double p = static_cast<double>(step.tokens_in);
    return 0.001 + (p > 0 ? fixed_ + linear_ * p + quadratic_ * p * p : 0.0) +
           1e-8 * static_cast<double>(step.context_tokens);
  }

 private:
  double fixed_, linear_, quadratic_;
};

TEST(LlmRoutingSloAware, PredictsThePrefillAtTheRequestsOwnPromptLength) {
  const CurveCost a(0.0, 1e-5, 1e-8);   // 64 tokens: 0.7 ms; 4,096: 209 ms
  const CurveCost b(0.020, 1e-5, 0.0);  // 64 tokens: 20.6 ms; 4,096: 61 ms
  LlmRouterSetup setup;
  setup.step_costs = {sample_step_cost(a), sample_step_cost(b)};
  const Worker w;
  StepContents mid;
  mid.tokens_in = 1000;  // between grid points: interpolated, within 10 % of the model
  const double exact = a.step_time(w, mid) - a.step_time(w, StepContents{});
  EXPECT_NEAR(setup.step_costs[0].prefill_time(1000), exact, 0.1 * exact);
  EXPECT_NEAR(setup.step_costs[1].prefill_time(64), 0.020 + 64e-5, 1e-9);  // on the grid
  auto r = make_router("slo_aware", setup);
  const auto b2 = fleet(2);
  LlmRouteRequest shorter = slo_request(1.0);
  shorter.prompt_tokens = 64;
  LlmRouteRequest longer = slo_request(1.0);
  longer.prompt_tokens = 4096;
  EXPECT_EQ(r->pick(shorter, b2, {}, 0.0).backend, 0);
  EXPECT_EQ(r->pick(longer, b2, {}, 0.0).backend, 1);
}

}  // namespace
}  // namespace tessera
