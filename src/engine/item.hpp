#pragma once

#include <cstdint>

#include "core/time.hpp"
#include "engine/app.hpp"

namespace tessera {

using RequestSlot = uint32_t;  // index of a live request inside the engine
using WorkerId = uint32_t;

// One unit of work at one task: a request's frame at the detector, or one detected
// object at a classifier. Items are small values moved between queues by copy.
struct Item {
  RequestSlot request = 0;
  TaskId task = 0;
  double accuracy = 1.0;  // product of the accuracies of the variants on its path so far
  Time origin = 0.0;      // the request's arrival at the front end (t_s)
  Time deadline = 0.0;    // origin + SLO
  Time enqueued = 0.0;    // arrival at this task's worker queue (t_r)
};

}  // namespace tessera
