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
  vgpus_.push_back(Vgpu{uplink, downlink});
  return static_cast<uint32_t>(gpus_.size() - 1);
}

Time ReservationBook::transfer_time(uint32_t from, uint32_t to, double bytes) const {
  if (same_server(from, to) || bytes <= 0) return 0.0;
  const double bw =
      std::min(nics_->params(vgpus_[from].up).bandwidth, nics_->params(vgpus_[to].down).bandwidth);
  return bytes / bw;
}

Time ReservationBook::transfer_latency(uint32_t from, uint32_t to) const {
  if (same_server(from, to)) return 0.0;
  return std::max(nics_->params(vgpus_[from].up).latency, nics_->params(vgpus_[to].down).latency);
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
    const Time l_i = pool.step_time(batch);
    const double bytes = pool.in_bytes_per_item * batch;
    Hop best;
    Time best_end = std::numeric_limits<Time>::infinity();
    Time best_wait = 0.0;
    for (uint32_t g : pool.members) {
      Hop h;
      h.vgpu = g;
      Time t = t_g;
      Time w = 0.0;
      if (k > 0) {
        h.xfer_len = transfer_time(last, g, bytes);
        if (h.xfer_len > 0) {
          h.xfer_start = earliest_common_fit(nics_->link(vgpus_[last].up),
                                             nics_->link(vgpus_[g].down), t, h.xfer_len);
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
      const Time end = h.start + l_i;
      if (end < best_end) {
        best_end = end;
        best = h;
        best_wait = w;
      }
    }
    if (pool.members.empty()) return Offer{};
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
