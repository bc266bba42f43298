#include "dataplane/ppipe/book.hpp"

#include <algorithm>
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
                                double bytes, Time& wait) const {
  Hop h;
  h.vgpu = g;
  Time t = t_g;
  Time w = 0.0;
  if (!first) {
    h.xfer_len = transfer_time(last, g, bytes);
    if (h.xfer_len > 0) {
      h.xfer_start = earliest_common_fit(nics_->link(vgpus_[last].up), nics_->link(vgpus_[g].down),
                                         t, h.xfer_len);
      w += h.xfer_start - t;
      t = h.xfer_start + h.xfer_len;
    } else {
      h.xfer_start = t;
    }
    t += transfer_latency(last, g);
  }
  h.ready = t;
  h.start = gpus_[g].earliest_fit(t, l_i);
  h.len = l_i;
  w += h.start - t;
  wait = w;
  return h;
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
    std::size_t n = pool.members.size();
    // Each member's bound: its vGPU's earliest fit once the input could be there, the
    // links free (exact when no transfer is needed: the first stage, or within a server).
    // Floating-point sums round monotonically and earliest_fit is monotone in its start,
    // so the member's true end is never below its bound.
    if (bound_.size() < n) bound_.resize(n);
    std::size_t lowest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t g = pool.members[i];
      Time ready = t_g;
      if (!first) {
        const Time xfer = transfer_time(last, g, bytes);
        if (xfer > 0) ready = ready + xfer;
        ready += transfer_latency(last, g);
      }
      bound_[i] = gpus_[g].earliest_fit(ready, l_i) + l_i;
      if (bound_[i] < bound_[lowest]) lowest = i;
      // The first stage's bound is the member's end, and no member ends before t_g + l_i:
      // the first member that does wins (later ones could only tie).
      if (first && bound_[i] == t_g + l_i) {
        lowest = i;
        n = i + 1;
        break;
      }
    }
    // The most promising member first, then the others that might still win.
    Time best_wait = 0.0;
    Hop best = member_hop(last, pool.members[lowest], first, t_g, l_i, bytes, best_wait);
    Time best_end = best.start + l_i;
    std::size_t best_at = lowest;
    for (std::size_t i = 0; i < n; ++i) {
      if (i == lowest || bound_[i] > best_end || (bound_[i] == best_end && i > best_at)) continue;
      Time w = 0.0;
      const Hop h = member_hop(last, pool.members[i], first, t_g, l_i, bytes, w);
      const Time end = h.start + l_i;
      if (end < best_end || (end == best_end && i < best_at)) {
        best_end = end;
        best = h;
        best_wait = w;
        best_at = i;
      }
    }
    offer.hop[k] = best;
    wait += best_wait;
    t_g = best_end;
    last = best.vgpu;
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
    gpus_[h.vgpu].reserve(gpu_id(batch_id, k), h.start, h.len);
  }
}

}  // namespace tessera::reservation
