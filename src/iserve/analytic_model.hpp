#pragma once

// tessera's analytic GPU cost and memory model of one LLM deployment configuration
// (docs/iserve.md#gpu-model): the numbers iServe's fingerprint profiler would measure, for
// GPUs that are not here. It fills a configuration map (llm_arch/config_map.hpp) whose
// entries are labelled source = "modelled".
//
// Memory (total over the TP × PP GPUs): weights (layers at the compression's bytes per
// parameter; embedding, LM head and norms in FP16) + KV cache for `kv_tokens` tokens (KV
// heads replicated when TP exceeds them) + per GPU a runtime reserve and the prefill
// activation workspace + per PP stage the inter-stage activation buffer.
// Time: LlmAnalyticCostModel (src/llm) for one TP rank holding every layer — prefill
// compute-bound (FLOPs at mfu), decode memory-bound (weights and KV at mbu), with the
// compression's kernel-efficiency factors — plus the TP all-reduces (1 or 2 per layer) and
// PP send/recv of the activations over the link the GPUs share.
// Pure functions of plain values; thread-safe. Namespace tessera::iserve (as all of src/iserve).

#include "iserve/gpu_spec.hpp"
#include "llm/llm_model.hpp"
#include "llm/llm_parallel.hpp"
#include "llm_arch/config_map.hpp"
#include "llm_arch/deployment_config.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera::iserve {

struct AnalyticOptions {
  int prompt_tokens = 512;   // the prompt TTFT is for (iServe treats TTFT as a constant)
  int kv_tokens = 2048;      // the context the KV cache is sized for (batch 1)
  int decode_context = 562;  // the context TPOT reads (prompt + half of 100 outputs)
};

// How a compression changes the layers: stored bytes per original parameter, the share of
// parameters kept (structured pruning), and the factors on mbu and mfu for its kernels.
struct CompressionEffect {
  double layer_bytes_per_param = 2.0;
  double kept_params = 1.0;
  double mbu_factor = 1.0;
  double mfu_factor = 1.0;
  double kv_bytes = 2.0;
};
CompressionEffect compression_effect(const LlmDeploymentConfig& config);

ConfigMapEntry analytic_entry(const LlmArchitecture& arch, const LlmDeploymentConfig& config,
                              const GpuSpec& gpu, const AnalyticOptions& options = {});

// The configuration as an LLM instance of the simulated data plane (src/llm/llm_parallel.hpp,
// docs/llm.md#tp--pp-instances): the whole model as the analytic model sees it (the
// compression's bytes and kernel factors, the LM head's compute), the GPU (memory
// utilization 1: the runtime reserve is in `reserved_bytes_per_gpu`, with the activation
// workspace, stage buffers and the FP16 embedding beyond the computed weights), and the
// TP × PP links. LlmParallelCostModel of it at batch 1 gives analytic_entry's TTFT and TPOT.
struct LlmInstanceModel {
  LlmModel model;
  LlmGpu gpu;
  LlmParallelism parallel;
};
LlmInstanceModel analytic_instance(const LlmArchitecture& arch, const LlmDeploymentConfig& config,
                                   const GpuSpec& gpu, const AnalyticOptions& options = {});

// The run spec's `llm:` section (model, kv_cache, gpu, parallel; no scheduler) of an
// instance, two-space indented under `llm:`, every number written to round-trip.
std::string llm_section_yaml(const LlmInstanceModel& instance, const std::string& comment);

// Every configuration of enumerate_deployment_configs(arch, gpus, mask), modelled.
ConfigMap analytic_config_map(const LlmArchitecture& arch, int gpus, const GpuSpec& gpu,
                              const AnalyticOptions& options = {}, const SupportMask& mask = {});

}  // namespace tessera::iserve
