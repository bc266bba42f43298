#pragma once

// AdaptiveBatcher: one decision of PPipe's resource reservation-based adaptive batching
// (§5.4; Algorithm 1 with the digest's typo fixes: the test is bs* == 0, reserve() takes
// Step 2's reservation, and the search runs down to batch size 1). Given the head of a
// DNN's queue (the oldest request's deadline), the queue's length and the reservation
// tables, it returns what to do now:
//   Step 1  probe every pooled pipeline at its planned batch size; keep the least wait;
//   Step 2  probe that pipeline at sizes planned..1 until the path finishes by the head's
//           deadline (bs*);
//   Step 3  bs* = 0: drop the head; fewer requests queued than bs*: wait until the last
//           moment at which a batch of the queued requests still meets the head's deadline,
//           then dispatch what is queued (the largest size that still fits); otherwise
//           reserve and dispatch bs* requests along the path.
// The repository's first-look rule ([R], digest §3.4) is a named option, off by default:
// the first time a request heads the queue only sizes >= round(0.95 x planned) are
// tried, and it is dropped at once if none fits.
//
// The caller owns the queue and the book and carries the decision out (reserve() for a
// dispatch). Within one decision the tables do not change, so a probe of a (pipeline,
// batch size) already probed in it is answered from that probe (Step 2 starts with the
// probe Step 1 made; the wait step re-reads Step 2's); the book still counts it as a
// probe. Engine-independent; not thread-safe.

#include <cstddef>
#include <vector>

#include "core/time.hpp"
#include "dataplane/ppipe/book.hpp"

namespace tessera::reservation {

struct BatcherOptions {
  // The first-look rule's fraction of the planned batch size; 0: off (the paper).
  double first_look_fraction = 0.0;
  // A wait shorter than this is the last moment: dispatch now.
  Time last_moment_tolerance = 1e-7;
};

struct Decision {
  enum class Kind { kIdle, kDrop, kWait, kDispatch };
  Kind kind = Kind::kIdle;
  Offer offer;                   // kDispatch: the path to reserve, offer.batch items
  Time wake_at = 0;              // kWait: look again then
  bool first_look_drop = false;  // kDrop by the first-look rule
};

class AdaptiveBatcher {
 public:
  AdaptiveBatcher(const ReservationBook& book, const std::vector<PipelinePlan>& pipelines,
                  BatcherOptions options = {})
      : book_(book), pipelines_(pipelines), options_(options) {}

  // `queued` >= 1 requests wait; the oldest's deadline is `head_deadline`. `first_look`:
  // this head has not been looked at before (only the first-look rule uses it).
  Decision decide(Time now, Time head_deadline, std::size_t queued, bool first_look) const;

 private:
  struct Probed {
    std::size_t pipeline;
    int batch;
    Offer offer;
  };
  Offer probe(std::size_t pipeline, int batch, Time now) const;

  const ReservationBook& book_;
  const std::vector<PipelinePlan>& pipelines_;
  BatcherOptions options_;
  mutable std::vector<Probed> probed_;  // this decision's probes
};

}  // namespace tessera::reservation
