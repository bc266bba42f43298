#include "dataplane/ppipe/batcher.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::reservation {

Offer AdaptiveBatcher::probe(std::size_t pipeline, int batch, Time now) const {
  // The tables do not change during one decision: a probe it already made is its answer.
  for (const Probed& p : probed_) {
    if (p.pipeline == pipeline && p.batch == batch) {
      book_.count_reused_probe();
      return p.offer;
    }
  }
  probed_.push_back({pipeline, batch, book_.probe(pipelines_[pipeline], batch, now)});
  return probed_.back().offer;
}

Decision AdaptiveBatcher::decide(Time now, Time head_deadline, std::size_t queued,
                                 bool first_look) const {
  Decision d;
  if (queued == 0) return d;
  probed_.clear();
  // Step 1: the pipeline with the least wait at its planned batch size.
  int best = -1;
  Time best_wait = std::numeric_limits<Time>::infinity();
  for (std::size_t p = 0; p < pipelines_.size(); ++p) {
    const Offer o = probe(p, pipelines_[p].batch, now);
    if (o.valid() && o.wait < best_wait) {
      best_wait = o.wait;
      best = static_cast<int>(p);
    }
  }
  if (best < 0) return d;  // no pool has a live member: nothing can run
  const PipelinePlan& pipe = pipelines_[static_cast<std::size_t>(best)];

  // Step 2: the largest batch size whose path finishes by the head's deadline.
  int lowest = 1;
  if (first_look && options_.first_look_fraction > 0) {
    lowest = std::max(1, static_cast<int>(std::lround(options_.first_look_fraction * pipe.batch)));
  }
  Offer chosen;
  for (int bs = pipe.batch; bs >= lowest; --bs) {
    Offer o = probe(static_cast<std::size_t>(best), bs, now);
    if (o.valid() && o.finish <= head_deadline) {
      chosen = o;
      break;
    }
  }
  // Step 3.
  if (!chosen.valid()) {
    d.kind = Decision::Kind::kDrop;
    d.first_look_drop = lowest > 1;
    return d;
  }
  chosen.pipeline = best;
  if (queued >= static_cast<std::size_t>(chosen.batch)) {
    d.kind = Decision::Kind::kDispatch;
    d.offer = chosen;
    return d;
  }
  // Too few requests: wait until the last moment a batch of the queued ones still meets
  // the head's deadline; at that moment dispatch the largest size that fits.
  const int n = static_cast<int>(queued);
  Offer now_offer = probe(static_cast<std::size_t>(best), n, now);
  const Time slack = head_deadline - now_offer.finish;
  if (slack > options_.last_moment_tolerance) {
    d.kind = Decision::Kind::kWait;
    d.wake_at = now + slack - 0.5 * options_.last_moment_tolerance;
    return d;
  }
  for (int bs = n; bs >= 1; --bs) {
    Offer o = bs == n ? now_offer : probe(static_cast<std::size_t>(best), bs, now);
    if (o.valid() && o.finish <= head_deadline) {
      o.pipeline = best;
      d.kind = Decision::Kind::kDispatch;
      d.offer = o;
      return d;
    }
  }
  d.kind = Decision::Kind::kDrop;
  return d;
}

}  // namespace tessera::reservation
