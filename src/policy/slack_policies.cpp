#include "policy/slack_policies.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "engine/policies.hpp"

namespace tessera {

const SlackPolicy::Menu& SlackPolicy::menu(const Worker& worker) {
  if (menus_.size() <= worker.id) menus_.resize(worker.id + 1);
  auto& cached = menus_[worker.id];
  if (cached) return *cached;
  auto m = std::make_unique<Menu>();
  const Task& task = app_.tasks[worker.task];
  m->max_batch = worker.max_batch;
  m->slots.resize(worker.variants.size());
  std::iota(m->slots.begin(), m->slots.end(), 0);
  auto accuracy = [&](int slot) {
    return task.variants[static_cast<std::size_t>(worker.variants[static_cast<std::size_t>(slot)])]
        .accuracy;
  };
  std::stable_sort(m->slots.begin(), m->slots.end(),
                   [&](int a, int b) { return accuracy(a) < accuracy(b); });
  for (int slot : m->slots) m->accuracy.push_back(accuracy(slot));
  for (int slot : m->slots) {
    if (worker.profiled_latency(slot, worker.max_batch) <
        worker.profiled_latency(m->fastest, worker.max_batch)) {
      m->fastest = slot;
    }
  }
  cached = std::move(m);
  prepare(worker, *cached);
  return *cached;
}

const std::string& SlackPolicy::variant_name(const Worker& worker, int slot) const {
  const Task& task = app_.tasks[worker.task];
  return task.variants[static_cast<std::size_t>(worker.variants[static_cast<std::size_t>(slot)])]
      .name;
}

BatchChoice SlackPolicy::choose(const Worker& worker, Time now) {
  const Menu& m = menu(worker);
  if (worker.queue->empty()) return drain(m);
  return decide(worker, m, worker.queue->front().deadline - now);
}

BatchChoice SlackPolicy::nothing_fits(const Worker& worker, const Menu& menu, Time slack) const {
  if (fallback_ == SlackFallback::kDrain) return drain(menu);
  BatchChoice best{-1, 0};
  for (int slot : menu.slots) {  // by accuracy ascending: later slots win ties
    const int b = largest_batch(worker, slot, menu.max_batch, slack);
    if (b > 0 && b >= best.max_size) best = {slot, b};
  }
  if (best.variant_slot < 0) return drain(menu);
  if (fallback_ == SlackFallback::kRate) {
    const BatchChoice d = drain(menu);
    const double fit_rate = static_cast<double>(best.max_size) /
                            worker.profiled_latency(best.variant_slot, best.max_size);
    const double drain_rate =
        static_cast<double>(d.max_size - 1) / worker.profiled_latency(d.variant_slot, d.max_size);
    if (fit_rate < drain_rate) return d;
  }
  return best;
}

int SlackPolicy::largest_batch(const Worker& worker, int slot, int max_batch, Time slack) {
  int best = 0;
  for (int b = 1; b <= max_batch; ++b) {
    if (worker.profiled_latency(slot, b) < slack) best = b;  // latency grows with b (P1)
  }
  return best;
}

// ---- SlackFit ----

void SlackFit::prepare(const Worker& worker, const Menu& menu) {
  if (table_.size() <= worker.id) table_.resize(worker.id + 1);
  auto& buckets = table_[worker.id];
  const int least = menu.slots.front();
  const int most = menu.slots.back();
  const Time lo = worker.profiled_latency(least, 1);
  const Time hi = std::max(lo, worker.profiled_latency(most, menu.max_batch));
  const int k = std::max(1, buckets_);
  const Time width = (hi - lo) / k;
  std::vector<bool> used(static_cast<std::size_t>(k), false);
  std::vector<Bucket> all(static_cast<std::size_t>(k));
  std::vector<double> best_accuracy(static_cast<std::size_t>(k), -1.0);
  for (std::size_t i = 0; i < menu.slots.size(); ++i) {
    const int slot = menu.slots[i];
    for (int b = 1; b <= menu.max_batch; ++b) {
      const Time l = worker.profiled_latency(slot, b);
      if (l < lo || l > hi) continue;
      auto idx = width > 0 ? static_cast<std::size_t>((l - lo) / width) : 0;
      idx = std::min(idx, static_cast<std::size_t>(k - 1));  // the last bucket is closed
      Bucket& bucket = all[idx];
      const bool better = !used[idx] || b > bucket.choice.max_size ||
                          (b == bucket.choice.max_size && menu.accuracy[i] > best_accuracy[idx]);
      if (better) {
        bucket = Bucket{l, BatchChoice{slot, b}};
        best_accuracy[idx] = menu.accuracy[i];
        used[idx] = true;
      }
    }
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (used[i]) buckets.push_back(all[i]);
  }
}

BatchChoice SlackFit::decide(const Worker& worker, const Menu& menu, Time slack) {
  const auto& buckets = table_[worker.id];
  // The last bucket whose latency is below the slack.
  auto it = std::lower_bound(buckets.begin(), buckets.end(), slack,
                             [](const Bucket& b, Time s) { return b.latency < s; });
  if (it == buckets.begin()) return nothing_fits(worker, menu, slack);
  return std::prev(it)->choice;
}

// ---- MaxBatch, MaxAcc ----

BatchChoice MaxBatch::decide(const Worker& worker, const Menu& menu, Time slack) {
  const int b = largest_batch(worker, menu.slots.front(), menu.max_batch, slack);
  if (b == 0) return nothing_fits(worker, menu, slack);
  int slot = menu.slots.front();
  for (int s : menu.slots) {
    if (worker.profiled_latency(s, b) < slack) slot = s;  // most accurate that still fits
  }
  return {slot, b};
}

BatchChoice MaxAcc::decide(const Worker& worker, const Menu& menu, Time slack) {
  int slot = -1;
  for (int s : menu.slots) {
    if (worker.profiled_latency(s, 1) < slack) slot = s;
  }
  if (slot < 0) return nothing_fits(worker, menu, slack);
  return {slot, std::max(1, largest_batch(worker, slot, menu.max_batch, slack))};
}

// ---- INFaaS, Clipper+ ----

BatchChoice Infaas::decide(const Worker& worker, const Menu& menu, Time slack) {
  int chosen = -1;
  for (std::size_t i = 0; i < menu.slots.size(); ++i) {
    if (menu.accuracy[i] + 1e-12 < floor_) continue;
    const int s = menu.slots[i];
    if (chosen < 0 || worker.profiled_latency(s, 1) < worker.profiled_latency(chosen, 1))
      chosen = s;
  }
  if (chosen < 0) chosen = menu.slots.back();  // nothing meets the floor: the most accurate
  const int b = largest_batch(worker, chosen, menu.max_batch, slack);
  return {chosen, b == 0 ? menu.max_batch : b};
}

BatchChoice ClipperPlus::decide(const Worker& worker, const Menu& menu, Time slack) {
  int chosen = -1;
  for (int s : menu.slots) {
    if (variant_name(worker, s) == variant_) chosen = s;
  }
  if (chosen < 0) {
    throw std::invalid_argument("clipper+: worker " + std::to_string(worker.id) +
                                " does not host variant '" + variant_ + "'");
  }
  const int b = largest_batch(worker, chosen, menu.max_batch, slack);
  return {chosen, b == 0 ? menu.max_batch : b};
}

}  // namespace tessera
