#pragma once

// KvBlockPool: one LLM instance's KV cache as a count of fixed-size blocks (PagedAttention's
// unit): how many exist, how many are held. The instance scheduler owns one per instance and
// asks it before admitting a request or growing one; a request holds ceil(tokens / block)
// blocks. Which physical block holds what is irrelevant to timing and not modelled. Not
// thread-safe.

#include <cstdint>

namespace tessera {

class KvBlockPool {
 public:
  KvBlockPool(uint32_t blocks, uint32_t block_tokens)
      : total_(blocks), block_tokens_(block_tokens == 0 ? 1 : block_tokens) {}

  uint32_t total() const { return total_; }
  uint32_t used() const { return used_; }
  uint32_t free() const { return total_ - used_; }
  uint32_t block_tokens() const { return block_tokens_; }
  // Blocks that hold `tokens` tokens.
  uint32_t blocks_for(uint64_t tokens) const {
    return static_cast<uint32_t>((tokens + block_tokens_ - 1) / block_tokens_);
  }
  // Takes n blocks if that many are free.
  bool take(uint32_t n) {
    if (n > free()) return false;
    used_ += n;
    return true;
  }
  void give_back(uint32_t n) { used_ = n > used_ ? 0 : used_ - n; }

 private:
  uint32_t total_;
  uint32_t used_ = 0;
  uint32_t block_tokens_;
};

}  // namespace tessera
