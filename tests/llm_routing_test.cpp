// The LLM routing policies (src/policy/llm_routing.*) on injected backend state and time:
// no sockets, no clocks, no sleeps.

#include "policy/llm_routing.hpp"

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

}  // namespace
}  // namespace tessera
