#include "llm/kv_cache.hpp"

#include <algorithm>

namespace tessera {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64's finaliser over the running state: every token moves every bit.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

uint64_t KvBlockPool::block_hash(uint64_t parent_hash, std::span<const int64_t> block) {
  uint64_t h = mix(0x7e55e4a, parent_hash);
  for (int64_t t : block) h = mix(h, static_cast<uint64_t>(t));
  return h;
}

void KvBlockPool::match(std::span<const int64_t> tokens, uint32_t max_blocks,
                        std::vector<uint64_t>& out) const {
  out.clear();
  if (!prefix_caching_) return;
  const std::size_t whole = tokens.size() / block_tokens_;
  const std::size_t limit = std::min<std::size_t>(whole, max_blocks);
  uint64_t parent_hash = 0;
  uint64_t parent = 0;
  for (std::size_t i = 0; i < limit; ++i) {
    const auto block = tokens.subspan(i * block_tokens_, block_tokens_);
    const uint64_t h = hash_(parent_hash, block);
    const auto found = by_hash_.find(h);
    if (found == by_hash_.end()) return;
    const Entry& e = entries_.at(found->second);
    if (e.parent != parent || !std::equal(block.begin(), block.end(), e.tokens.begin())) return;
    out.push_back(found->second);
    parent_hash = h;
    parent = found->second;
  }
}

bool KvBlockPool::take_with(std::span<const uint64_t> hits, uint32_t n) {
  uint32_t revived = 0;  // evictable hits: they stop being available for new blocks
  for (uint64_t s : hits) revived += entries_.at(s).refs == 0 ? 1 : 0;
  if (uint64_t{n} + revived > free()) return false;
  for (uint64_t s : hits) {
    Entry& e = entries_.at(s);
    if (e.refs++ == 0) {
      lru_.erase(e.lru);
      ++held_cached_;
    }
  }
  while (raw_free() < n) evict_one();
  anonymous_ += n;
  return true;
}

void KvBlockPool::evict_one() {
  const uint64_t serial = lru_.front();
  lru_.pop_front();
  const auto it = entries_.find(serial);
  by_hash_.erase(it->second.hash);
  entries_.erase(it);
  ++evictions_;
  if (on_evict_) on_evict_(serial);
}

uint64_t KvBlockPool::commit(std::span<const int64_t> block, uint64_t parent) {
  if (!prefix_caching_ || block.size() != block_tokens_ || anonymous_ == 0) return 0;
  uint64_t parent_hash = 0;
  if (parent != 0) {
    const auto p = entries_.find(parent);
    if (p == entries_.end()) return 0;
    parent_hash = p->second.hash;
  }
  const uint64_t h = hash_(parent_hash, block);
  const auto found = by_hash_.find(h);
  if (found != by_hash_.end()) {
    Entry& e = entries_.at(found->second);
    if (e.parent != parent || !std::equal(block.begin(), block.end(), e.tokens.begin())) {
      return 0;  // a collision: this block stays the request's own
    }
    // The same block is cached already: hold that one, give this one back.
    if (e.refs++ == 0) {
      lru_.erase(e.lru);
      ++held_cached_;
    }
    --anonymous_;
    return found->second;
  }
  const uint64_t serial = next_serial_++;
  Entry e;
  e.hash = h;
  e.parent = parent;
  e.tokens.assign(block.begin(), block.end());
  e.refs = 1;
  entries_.emplace(serial, std::move(e));
  by_hash_.emplace(h, serial);
  --anonymous_;
  ++held_cached_;
  return serial;
}

void KvBlockPool::release(std::span<const uint64_t> serials) {
  for (uint64_t s : serials) {
    const auto it = entries_.find(s);
    if (it == entries_.end() || it->second.refs == 0) continue;
    if (--it->second.refs == 0) {
      it->second.lru = lru_.insert(lru_.end(), s);
      --held_cached_;
    }
  }
}

}  // namespace tessera
