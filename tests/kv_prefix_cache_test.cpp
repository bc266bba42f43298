// KvBlockPool's automatic prefix caching (llm/kv_cache.hpp) and the LLM scheduler's use of
// it in simulated time: hits skip prefill, blocks are shared by reference, freed blocks stay
// cached until evicted LRU, a block in use is never evicted, collisions never hit.

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "llm/kv_cache.hpp"
#include "llm_harness.hpp"

namespace tessera {
namespace {

using testing::llm_arrival;
using testing::LlmHarness;
using testing::SimpleLlmCost;

std::vector<int64_t> ids(int64_t first, std::size_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Commits every whole block of `tokens` as one request would (it holds them anonymously
// first); returns the serials.
std::vector<uint64_t> commit_all(KvBlockPool& pool, const std::vector<int64_t>& tokens) {
  const uint32_t b = pool.block_tokens();
  const uint32_t blocks = static_cast<uint32_t>(tokens.size() / b);
  EXPECT_TRUE(pool.take(blocks));
  std::vector<uint64_t> serials;
  for (uint32_t i = 0; i < blocks; ++i) {
    serials.push_back(pool.commit(std::span<const int64_t>(tokens.data() + i * b, b),
                                  i == 0 ? 0 : serials.back()));
    EXPECT_NE(serials.back(), 0u);
  }
  return serials;
}

TEST(KvPrefixCache, WholeBlocksOfTheSamePrefixHit) {
  KvBlockPool pool(8, 4, true);
  const auto a = ids(100, 10);  // 2 whole blocks + 2 tokens
  const auto held = commit_all(pool, std::vector<int64_t>(a.begin(), a.begin() + 8));
  EXPECT_EQ(pool.used(), 2u);
  EXPECT_EQ(pool.cached(), 2u);
  std::vector<uint64_t> hits;
  pool.match(a, 100, hits);
  EXPECT_EQ(hits, held);
  pool.match(a, 1, hits);  // at most one block asked
  EXPECT_EQ(hits.size(), 1u);
  // Same second block after a different first block: no hit at all (the prefix differs).
  auto b = a;
  b[0] = 7;
  pool.match(b, 100, hits);
  EXPECT_TRUE(hits.empty());
  // Same first block, different second: one hit.
  auto c = a;
  c[5] = 7;
  pool.match(c, 100, hits);
  EXPECT_EQ(hits.size(), 1u);
  // A partial block never hits.
  pool.match(std::span<const int64_t>(a.data(), 3), 100, hits);
  EXPECT_TRUE(hits.empty());
}

TEST(KvPrefixCache, SharedBlocksAreRefCountedAndFreedOnesStayCachedUntilEvicted) {
  KvBlockPool pool(4, 2, true);
  const auto p = ids(1, 4);
  const auto serials = commit_all(pool, p);  // request A holds 2 cached blocks
  std::vector<uint64_t> hits;
  pool.match(p, 2, hits);
  ASSERT_EQ(hits.size(), 2u);
  ASSERT_TRUE(pool.take_with(hits, 1));  // request B shares them and takes one more
  EXPECT_EQ(pool.used(), 3u);            // shared blocks counted once
  pool.release(serials);                 // A ends: B still holds them
  EXPECT_EQ(pool.evictable(), 0u);
  pool.release(hits);  // B ends: cached, evictable, free to take
  pool.give_back(1);
  EXPECT_EQ(pool.used(), 0u);
  EXPECT_EQ(pool.evictable(), 2u);
  EXPECT_EQ(pool.free(), 4u);
  pool.match(p, 2, hits);
  EXPECT_EQ(hits.size(), 2u);  // still there
  // A request that needs every block evicts them, first released first.
  std::vector<uint64_t> evicted;
  pool.set_on_evict([&](uint64_t s) { evicted.push_back(s); });
  ASSERT_TRUE(pool.take(3));
  EXPECT_EQ(evicted, std::vector<uint64_t>{hits[0]});
  ASSERT_TRUE(pool.take(1));
  EXPECT_EQ(evicted.size(), 2u);
  EXPECT_EQ(pool.evictions(), 2u);
  pool.match(p, 2, hits);
  EXPECT_TRUE(hits.empty());
  EXPECT_FALSE(pool.take(1));  // exhausted: a clean refusal
}

TEST(KvPrefixCache, ABlockInUseIsNeverEvicted) {
  KvBlockPool pool(3, 2, true);
  const auto p = ids(1, 4);
  commit_all(pool, p);  // 2 cached blocks held
  EXPECT_TRUE(pool.take(1));
  EXPECT_FALSE(pool.take(1));  // nothing free and nothing evictable
  EXPECT_EQ(pool.cached(), 2u);
  std::vector<uint64_t> hits;
  pool.match(p, 2, hits);
  EXPECT_EQ(hits.size(), 2u);
}

TEST(KvPrefixCache, HitsOnEvictableBlocksCountAgainstNewBlocks) {
  KvBlockPool pool(3, 2, true);
  const auto p = ids(1, 4);
  const auto s = commit_all(pool, p);
  pool.release(s);  // 2 evictable, 1 free
  std::vector<uint64_t> hits;
  pool.match(p, 2, hits);
  // Reviving both hits leaves one free block: two more cannot be had, and nothing changes.
  EXPECT_FALSE(pool.take_with(hits, 2));
  EXPECT_EQ(pool.evictable(), 2u);
  EXPECT_EQ(pool.used(), 0u);
  EXPECT_TRUE(pool.take_with(hits, 1));
  EXPECT_EQ(pool.used(), 3u);
  EXPECT_EQ(pool.evictable(), 0u);
}

TEST(KvPrefixCache, AnEqualBlockCommittedTwiceIsShared) {
  KvBlockPool pool(4, 2, true);
  const auto p = ids(1, 2);
  const auto first = commit_all(pool, p);
  const auto second = commit_all(pool, p);  // computed again by a concurrent request
  EXPECT_EQ(first, second);
  EXPECT_EQ(pool.used(), 1u);  // its own copy went back
  EXPECT_EQ(pool.cached(), 1u);
}

TEST(KvPrefixCache, OffMeansNoCaching) {
  KvBlockPool pool(4, 2, false);
  EXPECT_TRUE(pool.take(1));
  const auto p = ids(1, 2);
  EXPECT_EQ(pool.commit(p, 0), 0u);
  std::vector<uint64_t> hits{1};
  pool.match(p, 1, hits);
  EXPECT_TRUE(hits.empty());
}

TEST(KvPrefixCache, TheChainedHashDependsOnThePrefix) {
  const auto block = ids(5, 4);
  EXPECT_NE(KvBlockPool::block_hash(0, block), KvBlockPool::block_hash(1, block));
  EXPECT_EQ(KvBlockPool::block_hash(3, block), KvBlockPool::block_hash(3, block));
}

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
