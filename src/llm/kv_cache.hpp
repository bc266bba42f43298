#pragma once

// KvBlockPool: one LLM instance's KV cache as fixed-size blocks (PagedAttention's unit), with
// automatic prefix caching (vLLM's design, docs/llm.md#prefix-caching). The instance
// scheduler owns one per instance and asks it before admitting a request or growing one; a
// request holds ceil(tokens / block) blocks. The simulator and the live server use this same
// pool through the same scheduler; the live server keeps the KV itself beside it (keyed by
// the serials this pool hands out).
//
// Blocks are of three kinds:
// - anonymous: held by one request, content not shared (take / give_back count them);
// - cached: a full block of prompt tokens, identified by the hash of its tokens and of the
//   block before it (so by the whole prefix up to its end), held by one or more requests
//   (a reference count);
// - evictable: a cached block no request holds any more, kept with its KV in an LRU list and
//   handed to the next request whose prompt starts with the same blocks. A new block is
//   taken from the free blocks first, then by evicting the least recently freed cached block.
//   A block some request holds is never evicted.
// Hash collisions never serve wrong KV: a cached block keeps its tokens and the serial of the
// block before it, and a hit compares both, so a hit means the same tokens from position 0.
// Serials are never reused. Not thread-safe.

#include <cstdint>
#include <functional>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace tessera {

class KvBlockPool {
 public:
  // The chained hash of a block after a prefix whose hash is `parent_hash` (0: none).
  using BlockHash = uint64_t (*)(uint64_t parent_hash, std::span<const int64_t> block);
  static uint64_t block_hash(uint64_t parent_hash, std::span<const int64_t> block);

  // `hash`: block_hash, or (tests) a weaker one that collides.
  KvBlockPool(uint32_t blocks, uint32_t block_tokens, bool prefix_caching = false,
              BlockHash hash = &KvBlockPool::block_hash)
      : total_(blocks),
        block_tokens_(block_tokens == 0 ? 1 : block_tokens),
        prefix_caching_(prefix_caching),
        hash_(hash) {}

  uint32_t total() const { return total_; }
  // Blocks some request holds (anonymous, or cached with a reference).
  uint32_t used() const { return anonymous_ + held_cached_; }
  // Blocks a request can take: free ones and evictable cached ones.
  uint32_t free() const { return total_ - used(); }
  uint32_t block_tokens() const { return block_tokens_; }
  bool prefix_caching() const { return prefix_caching_; }
  uint32_t cached() const { return static_cast<uint32_t>(entries_.size()); }
  uint32_t evictable() const { return static_cast<uint32_t>(lru_.size()); }
  uint64_t evictions() const { return evictions_; }
  // Blocks that hold `tokens` tokens.
  uint32_t blocks_for(uint64_t tokens) const {
    return static_cast<uint32_t>((tokens + block_tokens_ - 1) / block_tokens_);
  }
  // Takes n anonymous blocks if that many are free, evicting cached blocks as needed.
  bool take(uint32_t n) { return take_with({}, n); }
  void give_back(uint32_t n) { anonymous_ = n > anonymous_ ? 0 : anonymous_ - n; }

  // Prefix caching (each call does nothing without it).
  // The cached blocks that begin `tokens` (whole blocks only, at most `max_blocks`), in
  // order, as serials; `out` is cleared first.
  void match(std::span<const int64_t> tokens, uint32_t max_blocks,
             std::vector<uint64_t>& out) const;
  // Takes a reference on each of `hits` (match's answer, nothing evicted since) and n new
  // anonymous blocks, or nothing at all (false).
  bool take_with(std::span<const uint64_t> hits, uint32_t n);
  // One anonymous block a request holds now holds `block` (block_tokens() tokens) after
  // `parent` (the serial of the block before it, which the request holds; 0 for the first):
  // it becomes a cached block with one reference, or, when an equal block is cached already,
  // goes back and the request takes a reference on that one instead. Returns the serial the
  // request now holds, or 0 when another block has the same hash (the block stays
  // anonymous) or prefix caching is off.
  uint64_t commit(std::span<const int64_t> block, uint64_t parent);
  // Drops a reference on each cached block in `serials`, in that order; a block no request
  // holds becomes evictable, the earlier in `serials` the sooner evicted.
  void release(std::span<const uint64_t> serials);
  // Called with the serial of every evicted block (the live server frees its KV).
  void set_on_evict(std::function<void(uint64_t)> on_evict) { on_evict_ = std::move(on_evict); }

 private:
  struct Entry {
    uint64_t hash = 0;
    uint64_t parent = 0;  // serial of the block before it (0: the first block)
    std::vector<int64_t> tokens;
    uint32_t refs = 0;
    std::list<uint64_t>::iterator lru;  // valid when refs == 0
  };
  uint32_t raw_free() const { return total_ - anonymous_ - static_cast<uint32_t>(entries_.size()); }
  void evict_one();

  uint32_t total_;
  uint32_t block_tokens_;
  bool prefix_caching_;
  BlockHash hash_;
  uint32_t anonymous_ = 0;
  uint32_t held_cached_ = 0;  // cached blocks with refs > 0
  uint64_t next_serial_ = 1;
  uint64_t evictions_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;     // by serial
  std::unordered_map<uint64_t, uint64_t> by_hash_;  // hash -> serial
  std::list<uint64_t> lru_;                         // evictable serials, first evicted first
  std::function<void(uint64_t)> on_evict_;
};

}  // namespace tessera
