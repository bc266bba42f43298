#pragma once

// iServe's configuration map (§4.2, Fig. 6; digest §7.1 item 5): for each (model,
// deployment configuration) the estimated total memory over the configuration's TP × PP
// GPUs, mem_base (the footprint at TP = PP = 1, W + A), the time to first token and the time
// per output token. Written by the analytic GPU model (src/iserve/analytic_model.hpp) and by
// the fingerprint estimator; read by the deployment controller (src/plan/iserve/controller.hpp).
// File format (docs/iserve.md#configuration-map), JSON:
//
//   {"format": "tessera-config-map/1", "gpu": "a6000",
//    "entries": [{"model": "meta-llama/Llama-2-70b-hf", "layers": 80,
//                 "config": "tp2-pp4-int8-kv8", "tp": 2, "pp": 4, "weights": "int8",
//                 "kv_cache": "kv8", "pruning": "none", "memory_bytes": 7.6e10,
//                 "mem_base_bytes": 7.2e10, "ttft_s": 0.41, "tpot_s": 0.052,
//                 "source": "modelled"}],
//    "latency_clock": "wall",                                   (optional)
//    "not_estimated": [{"name": "tp1-pp1-gptq4-kv16", "reason": "..."}]}  (optional)
//
// `source` says where the numbers come from: "modelled" (analytic), "estimated"
// (fingerprints, src/llm_arch/iserve_estimator.hpp), "measured". An estimated map says which
// clock its latencies were measured on and lists the configurations its profile could not
// estimate, with why. Plain values; safe to share between threads once built.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "llm_arch/deployment_config.hpp"

namespace tessera {

struct ConfigMapEntry {
  std::string model;
  int64_t layers = 0;
  LlmDeploymentConfig config;
  double memory_bytes = 0;    // total over the TP × PP GPUs
  double mem_base_bytes = 0;  // footprint at TP = PP = 1 with the same compression
  double ttft_s = 0;
  double tpot_s = 0;
  std::string source = "modelled";

  // iServe Eq. 1: latency = TTFT + output_length × TPOT.
  double latency_s(double output_tokens) const { return ttft_s + output_tokens * tpot_s; }
  int gpus() const { return config.parallelism.gpus(); }
  // iServe §6's per-layer memory block: memory / (TP × layers).
  double mem_block_bytes() const {
    return memory_bytes /
           (static_cast<double>(config.parallelism.tp) * static_cast<double>(layers));
  }
};

struct ConfigMap {
  std::string gpu;  // the GPU type the numbers are for (or where fingerprints were profiled)
  std::vector<ConfigMapEntry> entries;
  std::string latency_clock;  // estimated maps: "wall" or "cpu"; empty otherwise
  // Configurations an estimate could not cover (compression or TP not profiled), with why.
  std::vector<std::pair<std::string, std::string>> not_estimated;
};

std::string config_map_to_json(const ConfigMap& map);
// Reads a file config_map_to_json wrote (or a user's). Errors are SpecErrors naming the
// file and the field (`entries[3].tpot_s`): unknown fields, negative or non-finite numbers,
// a configuration whose name disagrees with its fields.
ConfigMap load_config_map(const std::filesystem::path& file);

}  // namespace tessera
