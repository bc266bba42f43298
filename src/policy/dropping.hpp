#pragma once

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/policies.hpp"

namespace tessera {

// Never drops: late requests complete late.
class NoDropping final : public DropPolicy {
 public:
  DropReason on_batch(const Item&, const DropContext&) override { return DropReason::kNone; }
};

// Drops an item whose deadline has passed by the time its batch would start: running it
// could only produce a late result.
class DropExpired final : public DropPolicy {
 public:
  DropReason on_batch(const Item& item, const DropContext& ctx) override {
    return ctx.batch_start >= item.deadline ? DropReason::kExpired : DropReason::kNone;
  }
};

}  // namespace tessera
