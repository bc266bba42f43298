// KvBlockPool's automatic prefix caching (llm/kv_cache.hpp): whole blocks of the same
// prefix hit, blocks are shared by reference, freed blocks stay cached until evicted LRU, a
// block in use is never evicted, a hash collision never hits, exhaustion is a clean refusal.

#include "llm/kv_cache.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <span>
#include <vector>

namespace tessera {
namespace {

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

// Every block hashes alike: a hit must still compare tokens and the block before.
uint64_t colliding_hash(uint64_t, std::span<const int64_t>) { return 42; }

TEST(KvPrefixCache, AHashCollisionNeverServesAnotherPrefix) {
  KvBlockPool pool(8, 2, true, &colliding_hash);
  const auto a = ids(1, 2);
  const auto serials = commit_all(pool, a);
  std::vector<uint64_t> hits;
  pool.match(ids(50, 2), 1, hits);  // same hash, other tokens
  EXPECT_TRUE(hits.empty());
  pool.match(a, 1, hits);
  EXPECT_EQ(hits, serials);
  // Committing a different block with the same hash keeps it the request's own.
  ASSERT_TRUE(pool.take(1));
  EXPECT_EQ(pool.commit(ids(50, 2), 0), 0u);
  EXPECT_EQ(pool.cached(), 1u);
  EXPECT_EQ(pool.used(), 2u);
  // The second block of `a` collides with its first: a different parent, so no hit either.
  const auto a4 = ids(1, 4);
  pool.match(a4, 2, hits);
  EXPECT_EQ(hits.size(), 1u);
}

TEST(KvPrefixCache, TheChainedHashDependsOnThePrefix) {
  const auto block = ids(5, 4);
  EXPECT_NE(KvBlockPool::block_hash(0, block), KvBlockPool::block_hash(1, block));
  EXPECT_EQ(KvBlockPool::block_hash(3, block), KvBlockPool::block_hash(3, block));
}

}  // namespace
}  // namespace tessera
