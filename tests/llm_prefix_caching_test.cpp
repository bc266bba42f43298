// Automatic prefix caching in the LLM instance scheduler, simulated (docs/llm.md#prefix-caching):
// requests of one shared prefix skip the prefill of its cached whole blocks, never of their
// last token; other prefixes miss; shared blocks and a full pool still end every request.

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "llm_harness.hpp"

namespace tessera {
namespace {

using testing::llm_arrival;
using testing::LlmHarness;
using testing::SimpleLlmCost;

// The scheduler, simulated: prefill cost is 1 ms per token prefilled.
LlmSchedulerConfig prefix_config(bool caching, uint32_t blocks = 1000) {
  LlmSchedulerConfig c;
  c.policy = LlmPolicy::kContinuous;
  c.kv_blocks = blocks;
  c.block_tokens = 16;
  c.prefix_caching = caching;
  return c;
}

Arrival shared(Time t, uint32_t prompt, uint32_t prefix, uint32_t group) {
  Arrival a = llm_arrival(t, prompt, 4);
  a.shared_prefix_tokens = prefix;
  a.prefix_group = group;
  return a;
}

uint64_t prefilled(const LlmHarness& h) {
  uint64_t n = 0;
  for (const auto& s : h.steps) n += s.prefill_tokens;
  return n;
}

TEST(LlmPrefixCaching, ASharedPrefixIsPrefilledOnce) {
  // Three requests of 100 tokens whose first 64 are the same system prompt, one after the
  // other: the 2nd and 3rd prefill only 100 - 64 tokens (4 whole blocks hit).
  const std::vector<Arrival> trace = {shared(0.0, 100, 64, 1), shared(1.0, 100, 64, 1),
                                      shared(2.0, 100, 64, 1)};
  LlmHarness on(prefix_config(true), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  on.run(trace);
  LlmHarness off(prefix_config(false), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  off.run(trace);
  ASSERT_EQ(on.records.size(), 3u);
  EXPECT_EQ(prefilled(off), 300u);
  EXPECT_EQ(prefilled(on), 100u + 36u + 36u);
  EXPECT_EQ(on.scheduler().prefix_queries(), 300u);
  EXPECT_EQ(on.scheduler().prefix_hits(), 128u);
  EXPECT_EQ(off.scheduler().prefix_queries(), 0u);
  uint64_t step_hits = 0;
  for (const auto& s : on.steps) step_hits += s.prefix_hits;
  EXPECT_EQ(step_hits, 128u);
  // TTFT: 10 ms + 1 ms per token prefilled.
  EXPECT_NEAR(on.record(1)->ttft, 0.010 + 0.036, 1e-9);
  EXPECT_NEAR(off.record(1)->ttft, 0.010 + 0.100, 1e-9);
  for (const auto& r : on.records) EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(on.scheduler().kv().used(), 0u);
  EXPECT_GT(on.scheduler().kv().cached(), 0u);
}

TEST(LlmPrefixCaching, NeverTheWholePromptAndOtherGroupsMiss) {
  // A prompt that is all prefix (64 tokens, 4 blocks) still prefills its last block's worth:
  // at most (64 - 1) / 16 = 3 blocks hit. Another group's prompt hits nothing.
  LlmHarness h(prefix_config(true), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  h.run({shared(0.0, 64, 64, 1), shared(1.0, 64, 64, 1), shared(2.0, 64, 64, 2)});
  EXPECT_EQ(h.scheduler().prefix_hits(), 48u);
  EXPECT_EQ(prefilled(h), 64u + 16u + 64u);
}

TEST(LlmPrefixCaching, ConcurrentRequestsShareBlocksAndPoolExhaustionStillEndsAll) {
  // 12 blocks of 16 tokens: a request of 100 tokens + 4 out needs 7 blocks; with a shared
  // prefix of 64 tokens (4 blocks) two of them fit at once only by sharing. Every request
  // ends exactly once and every block comes back.
  std::vector<Arrival> trace;
  for (int i = 0; i < 6; ++i) trace.push_back(shared(0.001 * i, 100, 64, 1));
  trace.push_back(llm_arrival(0.01, 150, 40));  // no prefix: preempts, or waits
  LlmHarness h(prefix_config(true, 12), std::make_shared<SimpleLlmCost>(0.010, 0.001));
  h.run(trace);
  ASSERT_EQ(h.records.size(), trace.size());
  std::set<uint64_t> seen;
  for (const auto& r : h.records) EXPECT_TRUE(seen.insert(r.id).second);
  EXPECT_EQ(h.engine().requests_in_flight(), 0u);
  for (const auto& s : h.steps) EXPECT_LE(s.kv_used_blocks, s.kv_total_blocks);
  EXPECT_EQ(h.scheduler().kv().used(), 0u);
  EXPECT_GT(h.scheduler().prefix_hits(), 0u);
}

}  // namespace
}  // namespace tessera
