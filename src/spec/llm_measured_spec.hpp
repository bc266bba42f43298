#pragma once

// The run spec's measured LLM step-cost model (docs/specs.md#simulation):
//
//   simulation:
//     cost_model:
//       kind: llm_measured
//       prefill_fit: table            # table (piecewise-linear) | quadratic (least squares)
//       step_overhead_ms: 0           # optional, added to every step
//       prefill: {tokens: [16, 64, 256], ms: [0.8, 2.6, 22.7]}
//       decode: {batch: [1, 2], context: [256, 2048], ms: [[0.3, 0.7], [0.6, 1.3]]}
//
// as `tessera llm step-profile --cost-model-out` writes it. Parsed into an
// LlmMeasuredCostModel (src/llm/llm_measured_cost.hpp); a missing, negative, non-finite or
// misplaced value, an unsorted grid or a table of the wrong shape is a SpecError naming
// the file and the field. Stateless; thread-safe.

#include <memory>

#include "core/spec_node.hpp"
#include "engine/cost_model.hpp"

namespace tessera {

// `node` is the cost_model map (its kind already read as llm_measured).
std::shared_ptr<const CostModel> parse_llm_measured_cost(const SpecNode& node);

}  // namespace tessera
