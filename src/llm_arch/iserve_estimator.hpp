#pragma once

// iServe's estimator (§5.2–5.3; digest §2.2–2.3): from measured fingerprint profiles (the
// 1- and 2-layer fingerprints of a model, profiled by `tessera llm profile`) to the
// configuration map (model, configuration) -> {memory, mem_base, TTFT, TPOT} for every
// configuration the enumerator gives.
//
// Memory (method M2): per compression, the fingerprints' footprints at (TP, PP) = (1, 1),
// (1, 2), (2, 1) are extrapolated linearly over the layers (m = f1 + (L - 1)(f2 - f1)),
// then the 3×3 system m11 = W + A, m12 = W + A + 2 A_p, m21 = W + 2 A gives W, A, A_p and
// memory(TP, PP) = W + TP·A + [PP >= 2]·PP·A_p (digest §2.2, the paper's reading; the PP
// term is zero at PP = 1 since mem_base = W + A). Latency (method L2): per compression and
// TP at PP = 1, each fingerprint's two request latencies give its TTFT and TPOT through
// Eq. 1 (latency = TTFT + n·TPOT, n = output tokens after the first); Eqs. 2–3 give the
// per-layer and other parts (TTFT_layer = TTFT(fp2) − TTFT(fp1), TTFT_other = 2·TTFT(fp1)
// − TTFT(fp2), the same for TPOT), and TTFT = L·TTFT_layer + TTFT_other. PP ≥ 2 reuses the
// PP = 1 latency of its TP and compression.
//
// Fingerprint depths: the paper profiles the 1- and 2-layer fingerprints (`depths` = {1,
// 2}, the default, named `iserve`). A profile may instead hold the fingerprints of a < b
// layers (the variant `iserve-deep`, e.g. 4 and 8 layers, whose weights exceed the CPU's
// caches as the full model's do): the same linear extrapolation then reads per-layer =
// (x_b − x_a)/(b − a), other = x_a − a·per-layer, full = other + L·per-layer, for memory
// at each (TP, PP) and for TTFT and TPOT; with {1, 2} these are exactly Eqs. 2–3 and
// m = f1 + (L − 1)(f2 − f1).
//
// Plain values and pure functions; the parser takes hostile input and throws SpecError
// naming the file and field.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/spec_node.hpp"
#include "llm_arch/config_map.hpp"
#include "llm_arch/deployment_config.hpp"
#include "llm_arch/llm_architecture.hpp"

namespace tessera {

inline constexpr const char* kFingerprintProfileFormat = "tessera-iserve-fingerprint-profile/1";

struct FingerprintMemory {
  int64_t fingerprint_layers = 1;  // one of the profile's two depths
  int tp = 1, pp = 1;
  double bytes = 0;  // peak bytes held while serving one request
};

struct FingerprintLatency {
  int64_t fingerprint_layers = 1;
  int tp = 1;
  int64_t output_length = 0;  // tokens after the first
  double seconds = 0;         // median request latency (wall clock)
  double cpu_seconds = 0;     // median CPU time of the process per request; 0: not measured
};

// Which latency the estimator uses: the wall clock (the paper's), or the process's CPU time
// (robust where other work shares the cores; with TP > 1 it sums the shards' work).
enum class LatencyClock { kWall, kCpu };

struct CompressionProfile {
  WeightQuant weights = WeightQuant::kFp16;
  KvQuant kv_cache = KvQuant::kFp16;
  std::vector<FingerprintMemory> memory;
  std::vector<FingerprintLatency> latency;
};

struct FingerprintProfile {
  std::string model;   // the full model's name
  int64_t layers = 0;  // the full model's layers
  std::string device;  // where it was measured ("cpu, 1 intra-op thread per shard")
  int64_t prompt_tokens = 0;
  int64_t repeats = 0;
  // The two fingerprints' layers (a < b); {1, 2} is the paper's. JSON field
  // "fingerprint_depths", optional, default [1, 2].
  std::pair<int64_t, int64_t> depths{1, 2};
  std::vector<CompressionProfile> compressions;
};

FingerprintProfile parse_fingerprint_profile(const SpecNode& node);
FingerprintProfile load_fingerprint_profile(const std::filesystem::path& file);
std::string fingerprint_profile_to_json(const FingerprintProfile& profile);

// The solved memory terms of one compression (bytes), and the latency terms of one
// (compression, TP) (seconds).
struct MemoryTerms {
  double w = 0, a = 0, a_p = 0;
  double at(const Parallelism& p) const;  // W + TP·A + [PP >= 2]·PP·A_p
};
struct LatencyTerms {
  double ttft_layer = 0, ttft_other = 0, tpot_layer = 0, tpot_other = 0;
};
// `depths` are the fingerprints' layers (FingerprintProfile::depths).
MemoryTerms solve_memory(const CompressionProfile& c, int64_t layers,
                         std::pair<int64_t, int64_t> depths = {1, 2});  // throws if missing
LatencyTerms solve_latency(const CompressionProfile& c, int tp,
                           LatencyClock clock = LatencyClock::kWall,
                           std::pair<int64_t, int64_t> depths = {1, 2});  // throws if missing

// The configuration map (llm_arch/config_map.hpp) of every configuration of `arch` on up to
// `gpus` GPUs: entries with source "estimated", `gpu` = where the profile was measured,
// `latency_clock` set, and what the profile cannot estimate under `not_estimated`.
ConfigMap estimate_config_map(const LlmArchitecture& arch, const FingerprintProfile& profile,
                              int gpus, LatencyClock clock = LatencyClock::kWall);

}  // namespace tessera
