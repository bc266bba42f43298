#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "policy/variant_choice.hpp"

namespace tessera {

// SuperServe's per-batch choice of (variant, batch size) from the slack θ of the most
// urgent queued request (its deadline minus now; the queue should be earliest-deadline
// first). They work for any worker hosting several variants: a supernet's subnets or a
// pipeline stage's model variants.
//
// When no choice of a policy fits θ (an expired or nearly expired request at the head; the
// papers do not say what then), the fallback decides:
// - kDrain (default): every policy runs its fastest allowed variant at the worker's max
//   batch, which drains the queue fastest; dropping expired requests is the dropping
//   family's job;
// - kFit (SlackFit, MaxBatch, MaxAcc): the largest batch, then the most accurate variant,
//   of any (variant, batch) whose latency is below θ, so that the head request still
//   makes its deadline; kDrain when nothing at all fits.
// - kRate (attainment first): kFit's choice when it serves requests on time at least as
//   fast as draining can, b_fit / l(b_fit) >= (max_batch - 1) / l_fastest(max_batch) (the
//   drain batch loses at least the head, whose slack it overruns); kDrain otherwise. Where
//   latency grows in proportion to the batch this is kFit; under a large fixed cost per
//   batch it refuses the small batches that would cut throughput in a burst.
enum class SlackFallback { kDrain, kFit, kRate };

struct SlackSettings {
  int buckets = 10;             // SlackFit's latency buckets (the paper gives no number)
  double accuracy_floor = 0.0;  // INFaaS: cheapest variant at least this accurate
  std::string fixed_variant;    // Clipper+: the one variant served
  SlackFallback fallback = SlackFallback::kDrain;
};

// Shared machinery: each worker's variants sorted by accuracy, cached per worker.
class SlackPolicy : public VariantPolicy {
 public:
  explicit SlackPolicy(const App& app, SlackFallback fallback = SlackFallback::kDrain)
      : app_(app), fallback_(fallback) {}
  BatchChoice choose(const Worker& worker, Time now) final;

 protected:
  struct Menu {
    std::vector<int> slots;  // worker variant slots, by accuracy ascending
    std::vector<double> accuracy;
    int max_batch = 1;
    int fastest = 0;  // slot with the lowest latency at max_batch
  };
  virtual BatchChoice decide(const Worker& worker, const Menu& menu, Time slack) = 0;
  virtual void prepare(const Worker&, const Menu&) {}
  // The largest batch b <= max_batch with latency(slot, b) < slack, or 0 if none.
  static int largest_batch(const Worker& worker, int slot, int max_batch, Time slack);
  static BatchChoice drain(const Menu& menu) { return {menu.fastest, menu.max_batch}; }
  // What runs when the policy's own rule finds nothing below θ (SlackFallback).
  BatchChoice nothing_fits(const Worker& worker, const Menu& menu, Time slack) const;
  const std::string& variant_name(const Worker& worker, int slot) const;

 private:
  const Menu& menu(const Worker& worker);
  const App& app_;
  SlackFallback fallback_;
  std::vector<std::unique_ptr<Menu>> menus_;  // by worker id
};

// SlackFit (§4.2, App. A.4–A.5): offline, evenly spaced latency buckets between the
// fastest (least accurate, batch 1) and slowest (most accurate, max batch) choices; each
// bucket keeps, among the (variant, batch) pairs whose latency falls inside it, the one
// with the largest batch (ties: more accurate). Online: the bucket whose latency is
// closest below θ.
class SlackFit final : public SlackPolicy {
 public:
  SlackFit(const App& app, int buckets, SlackFallback fallback = SlackFallback::kDrain)
      : SlackPolicy(app, fallback), buckets_(buckets) {}

 private:
  struct Bucket {
    Time latency;
    BatchChoice choice;
  };
  BatchChoice decide(const Worker& worker, const Menu& menu, Time slack) override;
  void prepare(const Worker& worker, const Menu& menu) override;
  int buckets_;
  std::vector<std::vector<Bucket>> table_;  // by worker id
};

// Maximise the batch first (with the least accurate variant), then the accuracy.
class MaxBatch final : public SlackPolicy {
 public:
  using SlackPolicy::SlackPolicy;

 private:
  BatchChoice decide(const Worker& worker, const Menu& menu, Time slack) override;
};

// Maximise the accuracy first (at batch 1), then the batch.
class MaxAcc final : public SlackPolicy {
 public:
  using SlackPolicy::SlackPolicy;

 private:
  BatchChoice decide(const Worker& worker, const Menu& menu, Time slack) override;
};

// INFaaS: the cheapest variant (lowest batch-1 latency) whose accuracy meets the floor
// (no floor: the cheapest of all), at the largest batch that fits θ.
class Infaas final : public SlackPolicy {
 public:
  Infaas(const App& app, double floor) : SlackPolicy(app), floor_(floor) {}

 private:
  BatchChoice decide(const Worker& worker, const Menu& menu, Time slack) override;
  double floor_;
};

// Clipper+: one fixed variant, at the largest batch that fits θ.
class ClipperPlus final : public SlackPolicy {
 public:
  ClipperPlus(const App& app, std::string variant)
      : SlackPolicy(app), variant_(std::move(variant)) {}

 private:
  BatchChoice decide(const Worker& worker, const Menu& menu, Time slack) override;
  std::string variant_;
};

}  // namespace tessera
