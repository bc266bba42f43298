#pragma once

// The BPE model of a Hugging Face tokenizer.json (`model.type` "BPE"): a vocabulary, merges
// applied lowest rank first (leftmost on ties), `ignore_merges` (a word in the vocabulary
// is one token), byte fallback (a character missing from the vocabulary becomes its
// <0xXX> byte tokens) and the unknown token (fused runs when `fuse_unk`). Words arrive
// in the model's alphabet (byte-level characters, or text with the Metaspace character).
// Immutable after construction; safe to share between threads.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera {

class BpeModel {
 public:
  struct Options {
    std::string unk_token;  // empty: none
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
  };
  // `merges`: pairs in rank order; each side and their concatenation must be in `vocab`
  // (std::invalid_argument naming the merge's index otherwise).
  BpeModel(std::unordered_map<std::string, int64_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, Options options);

  // Appends the ids of one pre-tokenized word to `out`. Characters that neither the
  // vocabulary, the byte tokens nor an unknown token can represent are left out.
  void tokenize(std::string_view word, std::vector<int64_t>& out) const;

  const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int64_t id;  // the merged token
  };
  static uint64_t pair_key(int64_t a, int64_t b) {
    return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
  }

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<int64_t> byte_ids_;  // <0xXX> token of each byte, -1 when missing
  int64_t unk_id_ = -1;
  Options options_;
};

}  // namespace tessera
