#pragma once

// Item: one unit of work at one task, the value the engine moves between queues, steps and
// links. Items are small and copied; the request they belong to lives in the engine's ledger.

#include <cstdint>
#include <limits>

#include "core/time.hpp"
#include "engine/app.hpp"

namespace tessera {

using RequestSlot = uint32_t;  // index of a live request inside the engine
using WorkerId = uint32_t;
inline constexpr WorkerId kAnyWorker = std::numeric_limits<WorkerId>::max();

// One unit of work at one task: a request's frame at the detector, or one detected
// object at a classifier. Items are small values moved between queues by copy.
struct Item {
  RequestSlot request = 0;
  TaskId task = 0;
  double accuracy = 1.0;  // product of the accuracies of the variants on its path so far
  Time origin = 0.0;      // the request's arrival at the front end (t_s)
  Time deadline = 0.0;    // origin + SLO
  Time enqueued = 0.0;    // arrival at this task's worker queue (t_r)
  // The request's sizes from the workload (an LLM request's prompt and output tokens; 0 when
  // the workload has none), for cost models that depend on them.
  uint32_t tokens_in = 0;
  uint32_t tokens_out = 0;
  // An LLM prompt's shared prefix in a simulated workload: its first shared_prefix_tokens
  // are the same for every request of prefix_group (e.g. a system prompt; 0: none).
  uint32_t shared_prefix_tokens = 0;
  uint32_t prefix_group = 0;
  // The instance a transfer over a link already chose for this item (the receiving end of
  // the link); kAnyWorker lets the task's dispatcher choose on arrival.
  WorkerId target = kAnyWorker;
};

}  // namespace tessera
