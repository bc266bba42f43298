#pragma once

// The run spec's `llm:` section (docs/specs.md#llm, docs/llm.md): the model's dimensions,
// the KV cache's block size and dtype, the GPU's figures and the instance scheduler's
// policy. With it, every instance of the run is an LLM instance (LlmInstanceScheduler) and
// the default cost model is the analytic one (LlmAnalyticCostModel; LlmParallelCostModel for
// a TP × PP instance, the section's `parallel:`). A plain value.

#include <memory>

#include "core/spec_node.hpp"
#include "engine/app.hpp"
#include "engine/instance_scheduler.hpp"
#include "llm/llm_model.hpp"
#include "llm/llm_parallel.hpp"
#include "llm/llm_scheduler_config.hpp"

namespace tessera {

struct LlmSpec {
  LlmModel model;
  LlmGpu gpu;
  LlmParallelism parallel;       // tp = pp = 1 unless the section has `parallel:`
  LlmSchedulerConfig scheduler;  // kv_blocks computed from model and gpu; SLOs from the app
};

// Reads and checks the section; errors name the field (a model that leaves no room for
// the KV cache on the GPU, SLO-aware admission with a policy that cannot use it).
LlmSpec parse_llm_spec(const SpecNode& node, const App& app);

// The section's cost model: LlmAnalyticCostModel, or LlmParallelCostModel when the instance
// spans several GPUs.
std::shared_ptr<const CostModel> llm_cost_model(const LlmSpec& spec);

// Builds an LlmInstanceScheduler with `config` for every instance.
SchedulerFactory llm_scheduler_factory(const LlmSchedulerConfig& config);

}  // namespace tessera
