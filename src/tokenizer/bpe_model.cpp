#include "tokenizer/bpe_model.hpp"

#include <cstdio>
#include <queue>
#include <stdexcept>

#include "tokenizer/unicode_text.hpp"

namespace tessera {

BpeModel::BpeModel(std::unordered_map<std::string, int64_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, Options options)
    : vocab_(std::move(vocab)), byte_ids_(256, -1), options_(std::move(options)) {
  for (const auto& [token, id] : vocab_) {
    if (id < 0 || id >= (int64_t{1} << 31)) {
      throw std::invalid_argument("token '" + token + "' has id " + std::to_string(id) +
                                  " (ids are in [0, 2^31))");
    }
  }
  const auto id_of = [&](const std::string& token) {
    auto it = vocab_.find(token);
    return it == vocab_.end() ? int64_t{-1} : it->second;
  };
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const int64_t ia = id_of(a), ib = id_of(b), merged = id_of(a + b);
    if (ia < 0 || ib < 0 || merged < 0) {
      throw std::invalid_argument("merges[" + std::to_string(i) + "] ('" + a + " " + b +
                                  "') uses a token the vocabulary does not have");
    }
    merges_.emplace(pair_key(ia, ib), Merge{static_cast<int32_t>(i), merged});  // first wins
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_ids_[static_cast<std::size_t>(b)] = id_of(name);
  }
  if (!options_.unk_token.empty()) {
    unk_id_ = id_of(options_.unk_token);
    if (unk_id_ < 0) {
      throw std::invalid_argument("unk_token '" + options_.unk_token +
                                  "' is not in the vocabulary");
    }
  }
}

void BpeModel::tokenize(std::string_view word, std::vector<int64_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // The initial symbols: one per character (or its byte tokens, or the unknown token).
  std::vector<int64_t> ids;
  bool last_unk = false;
  for (std::string_view ch : utf8_chars(word)) {
    if (auto it = vocab_.find(std::string(ch)); it != vocab_.end()) {
      ids.push_back(it->second);
      last_unk = false;
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : ch) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : ch) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        last_unk = false;
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (!(options_.fuse_unk && last_unk)) ids.push_back(unk_id_);
      last_unk = true;
    }
  }
  // Merges, lowest rank first, leftmost on ties, over a linked list of symbols.
  const auto n = ids.size();
  std::vector<std::ptrdiff_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<std::ptrdiff_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::ptrdiff_t>(i + 1) : -1;
  }
  struct Candidate {
    int32_t rank;
    std::size_t left;
    int64_t left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto offer = [&](std::size_t left) {
    if (next[left] < 0) return;
    const auto right = static_cast<std::size_t>(next[left]);
    auto it = merges_.find(pair_key(ids[left], ids[right]));
    if (it != merges_.end()) queue.push({it->second.rank, left, ids[left], ids[right]});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) offer(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    if (!alive[c.left] || next[c.left] < 0) continue;
    const auto right = static_cast<std::size_t>(next[c.left]);
    if (ids[c.left] != c.left_id || ids[right] != c.right_id) continue;  // stale
    ids[c.left] = merges_.at(pair_key(c.left_id, c.right_id)).id;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] >= 0)
      prev[static_cast<std::size_t>(next[right])] = static_cast<std::ptrdiff_t>(c.left);
    if (prev[c.left] >= 0) offer(static_cast<std::size_t>(prev[c.left]));
    offer(c.left);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (alive[i]) out.push_back(ids[i]);
  }
}

}  // namespace tessera
