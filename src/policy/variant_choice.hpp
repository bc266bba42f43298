#pragma once

#include "core/time.hpp"
#include "engine/policies.hpp"

namespace tessera {

// The worker's only (first) variant at its configured max batch size.
class FixedVariant final : public VariantPolicy {
 public:
  BatchChoice choose(const Worker& worker, Time) override { return {0, worker.max_batch}; }
};

}  // namespace tessera
