#pragma once

// The run spec's `llm:` section (docs/specs.md#llm, docs/llm.md): the model's dimensions,
// the KV cache's block size and dtype, the GPU's figures and the instance scheduler's
// policy. With it, every instance of the run is an LLM instance (LlmInstanceScheduler) and
// the default cost model is the analytic one (LlmAnalyticCostModel). A plain value.

#include "core/spec_node.hpp"
#include "engine/app.hpp"
#include "engine/instance_scheduler.hpp"
#include "llm/llm_model.hpp"
#include "llm/llm_scheduler_config.hpp"

namespace tessera {

struct LlmSpec {
  LlmModel model;
  LlmGpu gpu;
  LlmSchedulerConfig scheduler;  // kv_blocks computed from model and gpu; SLOs from the app
};

// Reads and checks the section; errors name the field (a model that leaves no room for
// the KV cache on the GPU, SLO-aware admission with a policy that cannot use it).
LlmSpec parse_llm_spec(const SpecNode& node, const App& app);

// Builds an LlmInstanceScheduler with `config` for every instance.
SchedulerFactory llm_scheduler_factory(const LlmSchedulerConfig& config);

}  // namespace tessera
