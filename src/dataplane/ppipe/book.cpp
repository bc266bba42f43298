#include "dataplane/ppipe/book.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::reservation {

void ReservationBook::share_nics(std::shared_ptr<NicTables> nics) {
  if (any_link_) throw std::logic_error("share_nics after a link was added");
  if (!nics) throw std::invalid_argument("share_nics: no tables");
  nics_ = std::move(nics);
}

uint32_t ReservationBook::add_link(const LinkParams& params) {
  any_link_ = true;
  return nics_->add(params);
}

uint32_t ReservationBook::add_link(const std::string& name, const LinkParams& params) {
  any_link_ = true;
  return nics_->named(name, params);
}

uint32_t ReservationBook::add_vgpu(uint32_t uplink, uint32_t downlink) {
  if (uplink >= nics_->size() || downlink >= nics_->size()) {
    throw std::invalid_argument("vGPU names a link the book does not hold");
  }
  gpus_.emplace_back();
  const LinkParams& up = nics_->params(uplink);
  const LinkParams& down = nics_->params(downlink);
  vgpus_.push_back(Vgpu{uplink, downlink, up.bandwidth, down.bandwidth, up.latency, down.latency});
  return static_cast<uint32_t>(gpus_.size() - 1);
}

Time ReservationBook::transfer_time(uint32_t from, uint32_t to, double bytes) const {
  if (same_server(from, to) || bytes <= 0) return 0.0;
  return bytes / std::min(vgpus_[from].up_bandwidth, vgpus_[to].down_bandwidth);
}

Time ReservationBook::transfer_latency(uint32_t from, uint32_t to) const {
  if (same_server(from, to)) return 0.0;
  return std::max(vgpus_[from].up_latency, vgpus_[to].down_latency);
}

Hop ReservationBook::member_hop(uint32_t last, uint32_t g, bool first, Time t_g, Time l_i,
                                Time xfer, Time latency, Time& wait) const {
  Hop h;
  h.vgpu = g;
  Time t = t_g;
  Time w = 0.0;
  if (!first) {
    h.xfer_len = xfer;
    if (h.xfer_len > 0) {
      h.xfer_start = earliest_common_fit(nics_->link(vgpus_[last].up), nics_->link(vgpus_[g].down),
                                         t, h.xfer_len);
      w += h.xfer_start - t;
      t = h.xfer_start + h.xfer_len;
    } else {
      h.xfer_start = t;
    }
    t += latency;
  }
  h.ready = t;
  h.start = gpus_[g].earliest_fit(t, l_i);
  h.len = l_i;
  w += h.start - t;
  wait = w;
  return h;
}

Time ReservationBook::member_bound(uint32_t g, bool first, Time t_g, Time l_i, Time xfer,
                                   Time latency) const {
  Time ready = t_g;
  if (!first) {
    if (xfer > 0) ready = ready + xfer;
    ready += latency;
  }
  return gpus_[g].earliest_fit(ready, l_i) + l_i;
}

void ReservationBook::note_changed(uint32_t vgpu) {
  if (vgpu >= vgpu_pools_.size()) return;
  for (const auto& [id, pos] : vgpu_pools_[vgpu]) {
    PoolIndex& ix = pools_[id];
    if (!ix.dirty[pos]) {
      ix.dirty[pos] = 1;
      ix.dirty_list.push_back(pos);
    }
  }
}

void ReservationBook::rebuild(PoolIndex& ix, uint32_t id, const PoolPlan& pool) const {
  for (uint32_t g : ix.members) {
    auto& held = vgpu_pools_[g];
    held.erase(
        std::remove_if(held.begin(), held.end(), [id](const auto& e) { return e.first == id; }),
        held.end());
  }
  const std::size_t n = pool.members.size();
  ix.members = pool.members;
  ix.by_free.clear();
  ix.by_start.clear();
  ix.by_gap.clear();
  ix.place.assign(n, PoolIndex::Place{});
  ix.dirty.assign(n, 1);  // every member is placed at the next probe
  ix.dirty_list.resize(n);
  if (vgpu_pools_.size() < gpus_.size()) vgpu_pools_.resize(gpus_.size());
  for (uint32_t pos = 0; pos < n; ++pos) {
    ix.dirty_list[pos] = pos;
    vgpu_pools_[pool.members[pos]].emplace_back(id, pos);
  }
}

void ReservationBook::place(PoolIndex& ix, uint32_t pos) const {
  using Key = PoolIndex::Entry;
  // A member's entry in a sorted list: in, out, or moved to its new key.
  const auto update = [](std::vector<Key>& v, bool was_in, Time old_key, bool now_in, Time new_key,
                         uint32_t p) {
    if (!was_in) {
      if (now_in) v.insert(std::upper_bound(v.begin(), v.end(), Key{new_key, p}), {new_key, p});
      return;
    }
    if (now_in && old_key == new_key) return;
    auto it = std::lower_bound(v.begin(), v.end(), Key{old_key, p});
    if (!now_in) {
      v.erase(it);
      return;
    }
    const Key k{new_key, p};
    if (k > *it) {
      const auto to = std::upper_bound(it + 1, v.end(), k);
      std::move(it + 1, to, it);
      *(to - 1) = k;
    } else {
      const auto to = std::upper_bound(v.begin(), it, k);
      std::move_backward(to, it, it + 1);
      *to = k;
    }
  };
  PoolIndex::Place& at = ix.place[pos];
  const Timeline& t = gpus_[ix.members[pos]];
  const bool in_start = !t.empty();
  const bool in_gap = !t.one_run();
  // The longest gap, rounded up: the scan tests a fit as fl(e + l_i) <= next start, which
  // can hold for a gap whose computed length is a few ulps of the times below l_i.
  const Time max_gap = in_gap ? t.max_gap() + 8 * std::numeric_limits<Time>::epsilon() *
                                                  std::max(1.0, std::abs(t.free_from()))
                              : 0.0;
  if (at.in_free && at.free_from == t.free_from() && at.in_start == in_start &&
      at.first_start == t.first_start() && at.in_gap == in_gap && at.max_gap == max_gap) {
    return;  // no key moved
  }
  update(ix.by_free, at.in_free, at.free_from, true, t.free_from(), pos);
  update(ix.by_start, at.in_start, at.first_start, in_start, t.first_start(), pos);
  update(ix.by_gap, at.in_gap, at.max_gap, in_gap, max_gap, pos);
  at = PoolIndex::Place{t.free_from(), t.first_start(), max_gap, true, in_start, in_gap};
}

ReservationBook::PoolIndex& ReservationBook::index_for(const PoolPlan& pool) const {
  auto [it, fresh] = pool_id_.try_emplace(&pool, static_cast<uint32_t>(pools_.size()));
  if (fresh) pools_.emplace_back();
  const uint32_t id = it->second;
  PoolIndex& ix = pools_[id];
  if (ix.members != pool.members) rebuild(ix, id, pool);
  for (const uint32_t pos : ix.dirty_list) {
    ix.dirty[pos] = 0;
    place(ix, pos);
  }
  ix.dirty_list.clear();
  return ix;
}

ReservationBook::StageBest ReservationBook::indexed_stage(const PoolIndex& ix, uint32_t last,
                                                          bool first, Time t_g, Time l_i,
                                                          double bytes) const {
  StageBest best;
  best.end = std::numeric_limits<Time>::infinity();
  uint32_t best_at = std::numeric_limits<uint32_t>::max();
  // A member is worked out in full only if its bound can beat the best so far (end, then
  // pool order); the result is the scan's.
  const auto consider = [&](uint32_t pos) {
    const uint32_t g = ix.members[pos];
    // The transfer's link time and latency, worked out once for the bound and the hop.
    const Time xfer = first ? 0.0 : transfer_time(last, g, bytes);
    const Time latency = first ? 0.0 : transfer_latency(last, g);
    const Time bound = member_bound(g, first, t_g, l_i, xfer, latency);
    if (bound > best.end || (bound == best.end && pos > best_at)) return;
    Time w = 0.0;
    const Hop h = member_hop(last, g, first, t_g, l_i, xfer, latency, w);
    const Time end = h.start + l_i;
    if (end < best.end || (end == best.end && pos < best_at)) {
      best = StageBest{h, w, end};
      best_at = pos;
    }
  };
  // A table whose intervals span [a, F) with no gap as long as l_i (by_gap's key) gives an input
  // ready at r the slot r when r + l_i <= a or r >= F, else some slot at or after F; so once the
  // previous stage ends at t, such a member with a < t + l_i ends no earlier than
  // F + l_i. The members with a gap of l_i or more first ...
  for (auto it = ix.by_gap.rbegin(); it != ix.by_gap.rend() && it->key >= l_i; ++it) {
    consider(it->pos);
  }
  // ... and those that might fit before their first reservation (a >= t + l_i) ...
  for (auto it = ix.by_start.rbegin(); it != ix.by_start.rend() && it->key >= t_g + l_i; ++it) {
    consider(it->pos);
  }
  // ... then every member by F, until F + l_i exceeds the best end.
  for (const auto& [free_from, pos] : ix.by_free) {
    if (free_from + l_i > best.end) break;
    consider(pos);
  }
  return best;
}

Offer ReservationBook::probe(const PipelinePlan& pipeline, int batch, Time now) const {
  ++probes_;
  Offer offer;
  offer.batch = batch;
  if (pipeline.pools.empty() || pipeline.pools.size() > kMaxHops) return offer;
  Time t_g = now;  // when the previous stage's output is ready
  Time wait = 0.0;
  uint32_t last = 0;
  for (std::size_t k = 0; k < pipeline.pools.size(); ++k) {
    const PoolPlan& pool = pipeline.pools[k];
    if (pool.members.empty()) return Offer{};
    const Time l_i = pool.step_time(batch);
    const double bytes = pool.in_bytes_per_item * batch;
    const bool first = k == 0;
    const StageBest best = indexed_stage(index_for(pool), last, first, t_g, l_i, bytes);
    offer.hop[k] = best.hop;
    wait += best.wait;
    t_g = best.end;
    last = best.hop.vgpu;
  }
  offer.hops = static_cast<int>(pipeline.pools.size());
  offer.finish = t_g;
  offer.wait = wait;
  return offer;
}

void ReservationBook::reserve(const Offer& offer, uint64_t batch_id) {
  for (int k = 0; k < offer.hops; ++k) {
    const Hop& h = offer.hop[static_cast<std::size_t>(k)];
    if (k > 0 && h.xfer_len > 0) {
      const uint32_t from = offer.hop[static_cast<std::size_t>(k - 1)].vgpu;
      nics_->link(vgpus_[from].up).reserve(xfer_id(batch_id, k), h.xfer_start, h.xfer_len);
      nics_->link(vgpus_[h.vgpu].down).reserve(xfer_id(batch_id, k), h.xfer_start, h.xfer_len);
    }
    note_changed(h.vgpu);
    gpus_[h.vgpu].reserve(gpu_id(batch_id, k), h.start, h.len);
  }
}

}  // namespace tessera::reservation
