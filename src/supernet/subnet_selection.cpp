#include "supernet/subnet_selection.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>

#include "supernet/flops.hpp"

namespace tessera::supernet {
namespace {

// Digit `pos` of the 29 (d, e, w in order).
std::uint8_t& digit(SubnetConfig& c, int pos) {
  if (pos < kDepthDigits) return c.d[static_cast<std::size_t>(pos)];
  pos -= kDepthDigits;
  if (pos < kMaxBlocks) return c.e[static_cast<std::size_t>(pos)];
  return c.w[static_cast<std::size_t>(pos - kMaxBlocks)];
}

constexpr int kAllDigits = kDepthDigits + kMaxBlocks + kWidthDigits;

void sort_by_macs(std::vector<SubnetConfig>& configs) {
  std::vector<std::pair<double, SubnetConfig>> keyed;
  for (const SubnetConfig& c : configs) keyed.emplace_back(subnet_cost(c).macs, c);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second.id() < b.second.id());
  });
  configs.clear();
  for (auto& [macs, c] : keyed) configs.push_back(c);
}

}  // namespace

std::vector<SubnetConfig> growth_chain() {
  std::vector<SubnetConfig> chain{SubnetConfig::min_config()};
  SubnetConfig current = chain.front();
  while (current != SubnetConfig::max_config()) {
    SubnetConfig best_next;
    double best_macs = -1.0;
    for (int pos = 0; pos < kAllDigits; ++pos) {
      // Raise the digit by one; if that is the same network, by one more.
      SubnetConfig next = current;
      while (digit(next, pos) < 2) {
        ++digit(next, pos);
        if (next.canonical() != current) break;
      }
      next = next.canonical();
      if (next == current) continue;
      const double m = subnet_cost(next).macs;
      if (best_macs < 0.0 || m < best_macs) {
        best_next = next;
        best_macs = m;
      }
    }
    if (best_macs < 0.0) throw std::logic_error("growth_chain: stuck at " + current.name());
    current = best_next;
    chain.push_back(current);
  }
  return chain;
}

std::vector<SubnetConfig> select_subnets(int n) {
  if (n < 2) throw std::invalid_argument("select at least 2 subnets (the minimum and the maximum)");
  const std::vector<SubnetConfig> chain = growth_chain();
  std::vector<SubnetConfig> picked;
  if (static_cast<std::size_t>(n) <= chain.size()) {
    std::vector<double> log_macs;
    for (const SubnetConfig& c : chain) log_macs.push_back(std::log(subnet_cost(c).macs));
    std::vector<bool> taken(chain.size(), false);
    for (int i = 0; i < n; ++i) {
      const double target =
          log_macs.front() + (log_macs.back() - log_macs.front()) * i / static_cast<double>(n - 1);
      std::size_t best = chain.size();
      for (std::size_t j = 0; j < chain.size(); ++j) {
        if (taken[j]) continue;
        if (best == chain.size() ||
            std::abs(log_macs[j] - target) < std::abs(log_macs[best] - target)) {
          best = j;
        }
      }
      taken[best] = true;
    }
    for (std::size_t j = 0; j < chain.size(); ++j) {
      if (taken[j]) picked.push_back(chain[j]);
    }
    return picked;  // the chain is already in MAC order
  }
  std::set<std::uint64_t> seen;
  for (const SubnetConfig& c : chain) {
    picked.push_back(c);
    seen.insert(c.id());
  }
  std::mt19937_64 rng(20250101);  // raw engine output only: the same sequence everywhere
  while (picked.size() < static_cast<std::size_t>(n)) {
    SubnetConfig c;
    for (int pos = 0; pos < kAllDigits; ++pos) digit(c, pos) = static_cast<std::uint8_t>(rng() % 3);
    c = c.canonical();
    if (seen.insert(c.id()).second) picked.push_back(c);
  }
  sort_by_macs(picked);
  return picked;
}

}  // namespace tessera::supernet
