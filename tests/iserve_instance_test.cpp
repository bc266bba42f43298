// A configuration of iServe's map as an LLM instance of the simulated data plane
// (iserve::analytic_instance, docs/llm.md#tp--pp-instances): at batch 1 its step times are
// the map's TTFT and TPOT, TP all-reduces and PP transfers included; its KV blocks follow
// the configuration's memory.

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/worker.hpp"
#include "iserve/analytic_model.hpp"
#include "llm/llm_parallel.hpp"
#include "llm_arch/deployment_config.hpp"

namespace tessera::iserve {
namespace {

LlmArchitecture arch(const std::string& name) {
  return load_llm_architecture(std::filesystem::path(TESSERA_SOURCE_DIR) / "data/llm" / name /
                               "config.json");
}

TEST(IServeInstance, BatchOneStepsAreTheMapsTtftAndTpot) {
  const GpuSpec gpu = gpu_spec("a6000");
  const AnalyticOptions options;
  int checked = 0;
  for (const std::string name : {"llama-2-70b", "falcon-40b", "llama-2-7b"}) {
    const LlmArchitecture a = arch(name);
    for (const LlmDeploymentConfig& c : enumerate_deployment_configs(a, 8)) {
      const ConfigMapEntry e = analytic_entry(a, c, gpu, options);
      const LlmInstanceModel inst = analytic_instance(a, c, gpu, options);
      const LlmParallelCostModel cost(inst.model, inst.gpu, inst.parallel);
      const Worker w;
      StepContents prefill;
      prefill.tokens_in = static_cast<uint64_t>(options.prompt_tokens);
      StepContents decode;
      decode.tokens_out = 1;
      decode.context_tokens = static_cast<uint64_t>(options.decode_context);
      EXPECT_NEAR(cost.step_time(w, prefill), e.ttft_s, 1e-9 * e.ttft_s) << name << c.name();
      EXPECT_NEAR(cost.step_time(w, decode), e.tpot_s, 1e-9 * e.tpot_s) << name << c.name();
      // The KV cache holds kv_tokens where the configuration's memory is the GPUs' memory.
      LlmGpu exact = inst.gpu;
      exact.memory_bytes = e.memory_bytes / c.parallelism.gpus();
      const uint32_t blocks = kv_blocks_for(inst.model, exact, inst.parallel, 16);
      EXPECT_NEAR(blocks, options.kv_tokens / 16, 1) << name << c.name();
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(IServeInstance, TpCutsTheStepAndPpAddsTransfers) {
  const GpuSpec gpu = gpu_spec("a6000");
  const LlmArchitecture a = arch("llama-2-70b");
  LlmDeploymentConfig c;
  c.weights = WeightQuant::kInt4;
  auto step = [&](int tp, int pp, int batch) {
    c.parallelism.tp = tp;
    c.parallelism.pp = pp;
    const LlmInstanceModel inst = analytic_instance(a, c, gpu);
    const LlmParallelCostModel cost(inst.model, inst.gpu, inst.parallel);
    StepContents s;
    s.batch = batch;
    s.tokens_out = static_cast<uint64_t>(batch);
    s.context_tokens = static_cast<uint64_t>(batch) * 1000;
    return cost.step_time(Worker{}, s);
  };
  EXPECT_LT(step(2, 1, 32), step(1, 1, 32));
  EXPECT_LT(step(4, 1, 32), step(2, 1, 32));
  // PP 2 at batch 64 costs about PP 1 at batch 32 (the transfer apart).
  EXPECT_NEAR(step(1, 2, 64), step(1, 1, 32), 0.002);
  EXPECT_GT(step(1, 2, 1), step(1, 1, 1));
}

}  // namespace
}  // namespace tessera::iserve
