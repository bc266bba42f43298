#pragma once

#include "core/time.hpp"
#include "engine/worker.hpp"

namespace tessera {

// Which of a worker's variants the next batch runs and how large it may be.
struct BatchChoice {
  int variant_slot = 0;  // index into Worker::variants
  int max_size = 1;
};

// Variant choice per batch (SuperServe's SlackFit and friends plug in here).
class VariantPolicy {
 public:
  virtual ~VariantPolicy() = default;
  virtual BatchChoice choose(const Worker& worker, Time now) = 0;
};

// The worker's only (first) variant at its configured max batch size.
class FixedVariant final : public VariantPolicy {
 public:
  BatchChoice choose(const Worker& worker, Time) override { return {0, worker.max_batch}; }
};

}  // namespace tessera
