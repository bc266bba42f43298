#include "iserve/analytic_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "engine/worker.hpp"
#include "llm/llm_cost_model.hpp"

namespace tessera::iserve {

CompressionEffect compression_effect(const LlmDeploymentConfig& config) {
  CompressionEffect e;
  e.kv_bytes = config.kv_cache == KvQuant::kInt8 ? 1.0 : 2.0;
  switch (config.pruning) {
    case Pruning::kNone:
      break;
    case Pruning::kWanda24:
      // 2:4 sparse storage: half the FP16 values plus 2 bits of index per kept value.
      e.layer_bytes_per_param = 0.5 * 2.0 + 0.5 * 0.25;
      e.mbu_factor = 0.8;
      e.mfu_factor = 0.8;
      return e;
    case Pruning::kWanda50:
      // Unstructured zeros kept in dense FP16 tensors: same bytes and time as FP16.
      return e;
    case Pruning::kLlmPruner25:
      e.kept_params = 0.75;
      return e;
    case Pruning::kLlmPruner50:
      e.kept_params = 0.5;
      return e;
  }
  switch (config.weights) {
    case WeightQuant::kFp16:
      break;
    case WeightQuant::kInt8:  // weight-only, one FP16 scale per output channel
      e.layer_bytes_per_param = 1.0;
      e.mbu_factor = 0.85;
      e.mfu_factor = 0.9;
      break;
    case WeightQuant::kInt4:  // packed two per byte, per-channel scale
      e.layer_bytes_per_param = 0.5;
      e.mbu_factor = 0.7;
      e.mfu_factor = 0.85;
      break;
    case WeightQuant::kGptq4:  // 4-bit, FP16 scale and 4-bit zero per group of 128
      e.layer_bytes_per_param = 0.5 + (2.0 + 0.5) / 128.0;
      e.mbu_factor = 0.65;
      e.mfu_factor = 0.8;
      break;
  }
  return e;
}

namespace {

double all_reduce_s(const GpuSpec& gpu, int n, double bytes) {
  if (n <= 1) return 0.0;
  const GpuLink& link = gpu.link_for(n);
  return link.alpha_s + 2.0 * (n - 1) / n * bytes / link.bus_bandwidth;
}

}  // namespace

ConfigMapEntry analytic_entry(const LlmArchitecture& arch, const LlmDeploymentConfig& config,
                              const GpuSpec& gpu, const AnalyticOptions& options) {
  const CompressionEffect c = compression_effect(config);
  const int tp = config.parallelism.tp;
  const int pp = config.parallelism.pp;
  const double layers = static_cast<double>(arch.layers);
  const double layer_params = static_cast<double>(arch.layer_params()) * c.kept_params;
  const double layer_bytes = layer_params * c.layer_bytes_per_param;
  const double fp16 = 2.0;
  const double embedding_bytes = static_cast<double>(arch.embedding_params()) * fp16;
  const double head_bytes =
      static_cast<double>(arch.head_params() + arch.final_norm_params()) * fp16;
  const double weights = layers * layer_bytes + embedding_bytes + head_bytes;

  // KV heads per TP rank: a share, or one replicated head when TP exceeds them.
  auto kv_heads_per_rank = [&](int t) {
    return std::max<double>(1.0, static_cast<double>(arch.kv_heads) / t);
  };
  auto kv_total = [&](int t) {
    return static_cast<double>(options.kv_tokens) * layers * 2.0 * kv_heads_per_rank(t) * t *
           static_cast<double>(arch.head_dim()) * c.kv_bytes;
  };
  const double hidden = static_cast<double>(arch.hidden);
  const double prompt = static_cast<double>(options.prompt_tokens);
  // Prefill workspace per GPU: residual stream, q/k/v/o and the MLP's two intermediates.
  auto activations = [&](int t) {
    return gpu.runtime_bytes +
           prompt * (4.0 * hidden + 2.0 * static_cast<double>(arch.ffn) * c.kept_params / t) *
               fp16 +
           static_cast<double>(arch.vocab) * 4.0;
  };
  const double stage_buffer = prompt * hidden * fp16;
  auto memory = [&](int t, int p) {
    return weights + kv_total(t) + t * p * activations(t) + (p >= 2 ? p * stage_buffer : 0.0);
  };

  // One TP rank traverses every layer (PP stages run one after another at batch 1).
  LlmModel rank;
  rank.name = arch.name;
  rank.layers = static_cast<uint32_t>(arch.layers);
  rank.kv_heads = static_cast<uint32_t>(kv_heads_per_rank(tp));
  rank.head_dim = static_cast<uint32_t>(arch.head_dim());
  const double head_compute_params = static_cast<double>(arch.vocab) * hidden;
  rank.params = (layers * layer_params + head_compute_params) / tp;
  rank.weight_bytes = (layers * layer_bytes + head_compute_params * fp16) / tp / rank.params;
  rank.kv_bytes = c.kv_bytes;
  LlmGpu g;
  g.name = gpu.name;
  g.memory_bytes = gpu.memory_bytes;
  g.bandwidth = gpu.bandwidth;
  g.flops = gpu.flops;
  g.mbu = gpu.mbu * c.mbu_factor;
  g.mfu = gpu.mfu * c.mfu_factor;
  g.step_overhead = layers * gpu.per_layer_overhead_s;
  const LlmAnalyticCostModel cost(rank, g);
  const Worker worker;

  const int reduces_per_layer = arch.parallel_residual ? 1 : 2;
  const GpuLink& stage_link = gpu.link_for(tp * pp);
  auto communication = [&](double tokens) {
    const double bytes = tokens * hidden * fp16;
    return layers * reduces_per_layer * all_reduce_s(gpu, tp, bytes) +
           (pp - 1) * (stage_link.alpha_s + bytes / stage_link.bus_bandwidth);
  };
  StepContents prefill;
  prefill.tokens_in = static_cast<uint64_t>(options.prompt_tokens);
  StepContents decode;
  decode.tokens_out = 1;
  decode.context_tokens = static_cast<uint64_t>(options.decode_context);

  ConfigMapEntry e;
  e.model = arch.name;
  e.layers = arch.layers;
  e.config = config;
  e.memory_bytes = memory(tp, pp);
  e.mem_base_bytes = memory(1, 1);
  e.ttft_s = cost.step_time(worker, prefill) + communication(prompt);
  e.tpot_s = cost.step_time(worker, decode) + communication(1.0);
  e.source = "modelled";
  return e;
}

LlmInstanceModel analytic_instance(const LlmArchitecture& arch, const LlmDeploymentConfig& config,
                                   const GpuSpec& gpu, const AnalyticOptions& options) {
  // The same quantities as analytic_entry, for the whole model rather than one rank.
  const CompressionEffect c = compression_effect(config);
  const int tp = config.parallelism.tp;
  const int pp = config.parallelism.pp;
  const double layers = static_cast<double>(arch.layers);
  const double layer_params = static_cast<double>(arch.layer_params()) * c.kept_params;
  const double layer_bytes = layer_params * c.layer_bytes_per_param;
  const double fp16 = 2.0;
  const double hidden = static_cast<double>(arch.hidden);
  const double head_compute_params = static_cast<double>(arch.vocab) * hidden;
  LlmInstanceModel inst;
  LlmModel& m = inst.model;
  m.name = arch.name;
  m.layers = static_cast<uint32_t>(arch.layers);
  m.kv_heads = static_cast<uint32_t>(arch.kv_heads);
  m.head_dim = static_cast<uint32_t>(arch.head_dim());
  m.params = layers * layer_params + head_compute_params;
  m.weight_bytes = (layers * layer_bytes + head_compute_params * fp16) / m.params;
  m.kv_bytes = c.kv_bytes;
  LlmGpu& g = inst.gpu;
  g.name = gpu.name;
  g.memory_bytes = gpu.memory_bytes;
  g.memory_utilization = 1.0;
  g.bandwidth = gpu.bandwidth;
  g.flops = gpu.flops;
  g.mbu = gpu.mbu * c.mbu_factor;
  g.mfu = gpu.mfu * c.mfu_factor;
  g.step_overhead = layers * gpu.per_layer_overhead_s;
  LlmParallelism& p = inst.parallel;
  p.tp = static_cast<uint32_t>(tp);
  p.pp = static_cast<uint32_t>(pp);
  p.hidden = static_cast<uint32_t>(arch.hidden);
  p.reduces_per_layer = arch.parallel_residual ? 1 : 2;
  p.tp_link = LlmLink{gpu.link_for(tp).alpha_s, gpu.link_for(tp).bus_bandwidth};
  p.pp_link = LlmLink{gpu.link_for(tp * pp).alpha_s, gpu.link_for(tp * pp).bus_bandwidth};
  // Everything but the KV cache, beyond the computed weights, spread over the GPUs.
  const ConfigMapEntry e = analytic_entry(arch, config, gpu, options);
  const double kv = static_cast<double>(options.kv_tokens) * llm_kv_bytes_per_token(m, p.tp);
  p.reserved_bytes_per_gpu =
      std::max(0.0, (e.memory_bytes - kv - m.weight_bytes_total()) / (tp * pp));
  return inst;
}

std::string llm_section_yaml(const LlmInstanceModel& inst, const std::string& comment) {
  const LlmModel& m = inst.model;
  const LlmGpu& g = inst.gpu;
  const LlmParallelism& p = inst.parallel;
  std::string quoted;
  for (char ch : m.name) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    if (ch != '\n') quoted += ch;
  }
  std::string out = "  # " + comment + "\n";
  out += fmt::format(
      "  model: {{name: \"{}\", layers: {}, kv_heads: {}, head_dim: {}, params_b: {:.17g}, "
      "weight_bytes: {:.17g}}}\n",
      quoted, m.layers, m.kv_heads, m.head_dim, m.params / 1e9, m.weight_bytes);
  out += fmt::format("  kv_cache: {{dtype: {}, block_tokens: 16}}\n",
                     m.kv_bytes == 1.0 ? "int8" : "fp16");
  out += fmt::format(
      "  gpu: {{name: {}, memory_gb: {:.17g}, memory_utilization: 1, bandwidth_gbs: {:.17g}, "
      "tflops: {:.17g}, mfu: {:.17g}, mbu: {:.17g}, step_overhead_ms: {:.17g}}}\n",
      g.name, g.memory_bytes / 1e9, g.bandwidth / 1e9, g.flops / 1e12, g.mfu, g.mbu,
      g.step_overhead * 1e3);
  out += fmt::format(
      "  parallel: {{tp: {}, pp: {}, hidden: {}, reduces_per_layer: {}, "
      "reserved_gb_per_gpu: {:.17g}, tp_link: {{latency_us: {:.17g}, bus_gbs: {:.17g}}}, "
      "pp_link: {{latency_us: {:.17g}, bus_gbs: {:.17g}}}}}\n",
      p.tp, p.pp, p.hidden, p.reduces_per_layer, p.reserved_bytes_per_gpu / 1e9,
      p.tp_link.latency * 1e6, p.tp_link.bus_bandwidth / 1e9, p.pp_link.latency * 1e6,
      p.pp_link.bus_bandwidth / 1e9);
  return out;
}

ConfigMap analytic_config_map(const LlmArchitecture& arch, int gpus, const GpuSpec& gpu,
                              const AnalyticOptions& options, const SupportMask& mask) {
  ConfigMap map;
  map.gpu = gpu.name;
  for (const LlmDeploymentConfig& c : enumerate_deployment_configs(arch, gpus, mask)) {
    map.entries.push_back(analytic_entry(arch, c, gpu, options));
  }
  return map;
}

}  // namespace tessera::iserve
