#pragma once

// iServe's deployment configuration space (iServe §1.3, §3; digest §7.1 item 2): tensor ×
// pipeline parallelism crossed with compression — a weight quantisation with a KV-cache
// quantisation, or a pruning method (never both) — filtered by what a model supports.
// For Llama-2-70B on 8 GPUs with everything supported this is 15 × (4 × 2 + 4) = 180
// configurations. Plain values; the enumerator is a pure function.

#include <string>
#include <vector>

#include "llm_arch/llm_architecture.hpp"

namespace tessera {

enum class WeightQuant { kFp16, kInt8, kInt4, kGptq4 };
enum class KvQuant { kFp16, kInt8 };
// Wanda 2:4 and LLM-Pruner 25 % are the paper's named methods; the paper counts four
// pruning variants without naming the other two, so Wanda unstructured 50 % and
// LLM-Pruner 50 % stand in for them (docs/iserve.md#configurations).
enum class Pruning { kNone, kWanda24, kWanda50, kLlmPruner25, kLlmPruner50 };

struct Parallelism {
  int tp = 1;  // tensor parallel degree: a power of two
  int pp = 1;  // pipeline stages
  int gpus() const { return tp * pp; }
};

struct LlmDeploymentConfig {
  Parallelism parallelism;
  WeightQuant weights = WeightQuant::kFp16;
  KvQuant kv_cache = KvQuant::kFp16;
  Pruning pruning = Pruning::kNone;
  // "tp2-pp4-int8-kv8", "tp1-pp1-fp16-kv16", "tp8-pp1-wanda2:4".
  std::string name() const;
};

// What a model supports (the analogue of the paper's Table 1, whose body is not in the
// paper): the methods allowed, on top of the structural rules below.
struct SupportMask {
  std::vector<WeightQuant> weights{WeightQuant::kFp16, WeightQuant::kInt8, WeightQuant::kInt4,
                                   WeightQuant::kGptq4};
  std::vector<KvQuant> kv_caches{KvQuant::kFp16, KvQuant::kInt8};
  std::vector<Pruning> prunings{Pruning::kWanda24, Pruning::kWanda50, Pruning::kLlmPruner25,
                                Pruning::kLlmPruner50};
};

// Why `p` cannot run `arch` (or an empty string if it can): TP must divide the attention
// heads, and the KV heads or be a multiple of them (KV heads are replicated across TP
// ranks when there are fewer of them); PP may not exceed the layers.
std::string parallelism_problem(const LlmArchitecture& arch, const Parallelism& p);

// The (TP, PP) pairs with TP in {1, 2, 4, 8, ...}, PP >= 1 and TP × PP <= gpus, that the
// model can run, ordered by TP then PP.
std::vector<Parallelism> parallelism_options(const LlmArchitecture& arch, int gpus);

// Every configuration: each parallelism option × (each weight quantisation × each KV-cache
// quantisation, then each pruning method with FP16 weights and KV cache).
std::vector<LlmDeploymentConfig> enumerate_deployment_configs(const LlmArchitecture& arch, int gpus,
                                                              const SupportMask& mask = {});

std::string to_string(WeightQuant q);
std::string to_string(KvQuant q);
std::string to_string(Pruning p);
// Parses the names to_string writes; throws std::invalid_argument listing the choices.
WeightQuant weight_quant_from_string(const std::string& name);
KvQuant kv_quant_from_string(const std::string& name);
Pruning pruning_from_string(const std::string& name);

}  // namespace tessera
