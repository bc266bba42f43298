#pragma once

#include <vector>

#include "core/spec_node.hpp"
#include "engine/app.hpp"

namespace tessera {

// Reads and validates an application DAG (docs/specs.md#application).
// Sizes are bounded (docs/reliability-specs.md#limits): at most limits::kMaxTasks tasks,
// fan-out means at most limits::kMaxFanoutMean, and one request may expect at most
// limits::kMaxItemsPerRequest items in all.
App parse_app(const SpecNode& node);

// The expected number of items one request sends through a finalized app: one to each
// root, then each task's mean fan-out (at its most prolific variant) times the edge's
// share down each out-edge; a join gets at most one item per request.
double expected_items_per_request(const App& app);
std::vector<double> expected_items_by_task(const App& app);  // by task index

}  // namespace tessera
