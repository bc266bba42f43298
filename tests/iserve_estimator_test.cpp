// iServe's estimator (src/llm_arch/iserve_estimator): from fingerprint profiles made from
// known linear models it recovers W, A, A_p and the per-layer latencies exactly (§5.2–5.3),
// fills the configuration map for every configuration the enumerator gives (or says why
// not), and refuses hostile profiles naming the field.

#include "llm_arch/iserve_estimator.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "core/error.hpp"

namespace tessera {
namespace {

const std::string kModels = std::string(TESSERA_SOURCE_DIR) + "/data/llm/";

// Ground truth: W = 1000 + 300 L, A = 50 + 10 L, A_p = 7 (bytes); TTFT = 2 + 0.5 L (×TP
// factor), TPOT = 0.3 + 0.1 L (seconds).
double true_memory(int64_t layers, int tp, int pp) {
  const auto l = static_cast<double>(layers);
  const double w = 1000 + 300.0 * l, a = 50 + 10.0 * l, ap = 7;
  return w + tp * a + (pp >= 2 ? pp * ap : 0.0);
}
double true_ttft(int64_t layers, int tp) {
  return (2 + 0.5 * static_cast<double>(layers)) / tp + 0.01 * tp;
}
double true_tpot(int64_t layers, int tp) {
  return (0.3 + 0.1 * static_cast<double>(layers)) / tp + 0.002 * tp;
}

FingerprintProfile synthetic(const std::vector<int>& tps) {
  FingerprintProfile p;
  p.model = "m";
  p.layers = 80;
  p.prompt_tokens = 16;
  p.repeats = 3;
  for (WeightQuant w : {WeightQuant::kFp16, WeightQuant::kInt8, WeightQuant::kInt4}) {
    for (KvQuant k : {KvQuant::kFp16, KvQuant::kInt8}) {
      CompressionProfile c;
      c.weights = w;
      c.kv_cache = k;
      for (int64_t fp = 1; fp <= 2; ++fp) {
        for (auto [tp, pp] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}}) {
          c.memory.push_back({fp, tp, pp, true_memory(fp, tp, pp)});
        }
        for (int tp : tps) {
          for (int64_t n : {4, 24}) {
            c.latency.push_back(
                {fp, tp, n, true_ttft(fp, tp) + static_cast<double>(n) * true_tpot(fp, tp)});
          }
        }
      }
      p.compressions.push_back(c);
    }
  }
  return p;
}

TEST(IserveEstimator, RecoversTheLinearModelsExactly) {
  const FingerprintProfile p = synthetic({1, 2, 4, 8});
  const MemoryTerms m = solve_memory(p.compressions[0], 80);
  EXPECT_NEAR(m.w, 1000 + 300.0 * 80, 1e-6);
  EXPECT_NEAR(m.a, 50 + 10.0 * 80, 1e-6);
  EXPECT_NEAR(m.a_p, 7, 1e-6);
  const LatencyTerms l = solve_latency(p.compressions[0], 4);
  EXPECT_NEAR(l.ttft_layer, 0.5 / 4, 1e-9);
  EXPECT_NEAR(l.tpot_other, 0.3 / 4 + 0.008, 1e-9);

  const LlmArchitecture arch = load_llm_architecture(kModels + "llama-2-70b/config.json");
  const ConfigMap map = estimate_config_map(arch, p, 8);
  // 15 parallelism options × 6 profiled compressions; gptq4 and pruning are not profiled.
  EXPECT_EQ(map.entries.size(), 90u);
  EXPECT_EQ(map.not_estimated.size(), 90u);
  for (const ConfigMapEntry& e : map.entries) {
    const auto& par = e.config.parallelism;
    EXPECT_NEAR(e.memory_bytes, true_memory(80, par.tp, par.pp), 1e-3) << e.config.name();
    EXPECT_NEAR(e.ttft_s, true_ttft(80, par.tp), 1e-9) << e.config.name();  // PP reuses PP 1
    EXPECT_NEAR(e.tpot_s, true_tpot(80, par.tp), 1e-9) << e.config.name();
    EXPECT_NEAR(e.mem_base_bytes, true_memory(80, 1, 1), 1e-3);
    EXPECT_NEAR(e.mem_block_bytes(), e.memory_bytes / (par.tp * 80.0), 1e-6);
  }
  const std::string json = config_map_to_json(map);
  EXPECT_NE(json.find("tessera-config-map/1"), std::string::npos);
  EXPECT_NE(json.find("tp8-pp1-int4-kv8"), std::string::npos);
}

TEST(IserveEstimator, UnprofiledTpIsReportedNotGuessed) {
  const FingerprintProfile p = synthetic({1, 2});
  const LlmArchitecture arch = load_llm_architecture(kModels + "llama-2-70b/config.json");
  const ConfigMap map = estimate_config_map(arch, p, 8);
  for (const ConfigMapEntry& e : map.entries) EXPECT_LE(e.config.parallelism.tp, 2);
  bool said = false;
  for (const auto& [name, why] : map.not_estimated) {
    if (name == "tp4-pp1-fp16-kv16") said = why.find("TP 4") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(IserveEstimator, ProfilesRoundTripAndHostileOnesAreRefused) {
  const FingerprintProfile p = synthetic({1});
  const std::string json = fingerprint_profile_to_json(p);
  const FingerprintProfile back = parse_fingerprint_profile(SpecNode::load_string(json, "p.json"));
  ASSERT_EQ(back.compressions.size(), 6u);
  EXPECT_EQ(back.compressions[2].weights, WeightQuant::kInt8);
  EXPECT_DOUBLE_EQ(back.compressions[0].memory[1].bytes, p.compressions[0].memory[1].bytes);

  const auto refused = [&](const std::string& from, const std::string& to,
                           const std::string& expect) {
    std::string bad = json;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    try {
      parse_fingerprint_profile(SpecNode::load_string(bad, "p.json"));
      ADD_FAILURE() << "accepted " << to;
    } catch (const SpecError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("p.json"), std::string::npos) << what;
      EXPECT_NE(what.find(expect), std::string::npos) << what;
    }
  };
  refused(kFingerprintProfileFormat, "other/1", "format");
  refused("\"weights\": \"fp16\"", "\"weights\": \"fp3\"", "weights");
  refused("\"bytes\": ", "\"bytes\": -", "bytes");
  refused("\"tp\": 1", "\"tp\": 1e400", "tp");
  refused("\"fingerprint_layers\": 1", "\"fingerprint_layers\": 3", "fingerprint_layers");
  refused("\"seconds\"", "\"secs\"", "secs");
  refused("\"weights\": \"int8\"", "\"weights\": \"fp16\"", "repeats the compression");
  EXPECT_THROW(parse_fingerprint_profile(SpecNode::load_string("[1, 2]", "p.json")), SpecError);
  EXPECT_THROW(parse_fingerprint_profile(SpecNode::load_string("{\"format\": {}}", "p.json")),
               SpecError);
}

TEST(IserveEstimator, TheCpuClockUsesCpuSecondsAndNeedsThem) {
  FingerprintProfile p = synthetic({1});
  const LlmArchitecture arch = load_llm_architecture(kModels + "llama-2-70b/config.json");
  // Without cpu_seconds nothing can be estimated on the CPU clock, and the map says why.
  const ConfigMap none = estimate_config_map(arch, p, 1, LatencyClock::kCpu);
  EXPECT_TRUE(none.entries.empty());
  ASSERT_FALSE(none.not_estimated.empty());
  EXPECT_NE(none.not_estimated.front().second.find("cpu_seconds"), std::string::npos);
  for (CompressionProfile& c : p.compressions) {
    for (FingerprintLatency& l : c.latency) l.cpu_seconds = 3 * l.seconds;
  }
  const ConfigMap wall = estimate_config_map(arch, p, 1);
  const ConfigMap cpu = estimate_config_map(arch, p, 1, LatencyClock::kCpu);
  ASSERT_EQ(cpu.entries.size(), wall.entries.size());
  for (std::size_t i = 0; i < cpu.entries.size(); ++i) {
    EXPECT_NEAR(cpu.entries[i].ttft_s, 3 * wall.entries[i].ttft_s, 1e-9);
    EXPECT_NEAR(cpu.entries[i].tpot_s, 3 * wall.entries[i].tpot_s, 1e-9);
  }
  EXPECT_NE(config_map_to_json(cpu).find("\"latency_clock\": \"cpu\""), std::string::npos);
  // cpu_seconds survives the round trip.
  const FingerprintProfile back =
      parse_fingerprint_profile(SpecNode::load_string(fingerprint_profile_to_json(p), "p.json"));
  EXPECT_DOUBLE_EQ(back.compressions[0].latency[0].cpu_seconds,
                   p.compressions[0].latency[0].cpu_seconds);
}

TEST(IserveEstimator, MissingMeasurementsAreClearErrors) {
  FingerprintProfile p = synthetic({1});
  p.compressions[0].memory.pop_back();  // the 2-layer (2, 1) memory
  EXPECT_THROW(solve_memory(p.compressions[0], 80), std::invalid_argument);
  p.compressions[1].latency.resize(3);  // one 2-layer length only
  EXPECT_THROW(solve_latency(p.compressions[1], 1), std::invalid_argument);
  const LlmArchitecture arch = load_llm_architecture(kModels + "llama-2-70b/config.json");
  const ConfigMap map = estimate_config_map(arch, p, 1);
  EXPECT_EQ(map.entries.size(), 4u);  // TP 1 × PP 1: 6 compressions less the 2 broken
}

// The iserve-deep variant: fingerprints of 4 and 8 layers. Per-layer = (x_8 − x_4) / 4,
// other = x_4 − 4·per-layer, full = other + L·per-layer; the values are exact in binary.
TEST(IserveEstimator, DeepFingerprintsExtrapolateFromTheirOwnDepths) {
  FingerprintProfile p;
  p.model = "m";
  p.layers = 32;
  p.prompt_tokens = 16;
  p.repeats = 3;
  p.depths = {4, 8};
  CompressionProfile c;
  // Memory (bytes): per layer 1024 at every point; other 4096 at (1, 1), 4608 at (1, 2)
  // and 6144 at (2, 1).
  for (auto [tp, pp, other] :
       std::vector<std::tuple<int, int, double>>{{1, 1, 4096}, {1, 2, 4608}, {2, 1, 6144}}) {
    for (int64_t d : {4, 8})
      c.memory.push_back({d, tp, pp, other + 1024.0 * static_cast<double>(d)});
  }
  // Latency (seconds) at TP 1, output lengths 2 and 10: TTFT(4) = 0.5, TPOT(4) = 0.25;
  // TTFT(8) = 0.75, TPOT(8) = 0.375, so TTFT per layer 0.0625, other 0.25; TPOT per layer
  // 0.03125, other 0.125.
  for (auto [d, ttft, tpot] :
       std::vector<std::tuple<int64_t, double, double>>{{4, 0.5, 0.25}, {8, 0.75, 0.375}}) {
    for (int64_t n : {2, 10}) {
      c.latency.push_back({d, 1, n, ttft + static_cast<double>(n) * tpot, 0});
    }
  }
  p.compressions.push_back(c);

  const MemoryTerms m = solve_memory(p.compressions[0], 32, p.depths);
  // m11 = 4096 + 32·1024 = 36864, m12 = 37376, m21 = 38912.
  EXPECT_EQ(m.a_p, 256.0);
  EXPECT_EQ(m.a, 2048.0);
  EXPECT_EQ(m.w, 34816.0);
  const LatencyTerms l = solve_latency(p.compressions[0], 1, LatencyClock::kWall, p.depths);
  EXPECT_EQ(l.ttft_layer, 0.0625);
  EXPECT_EQ(l.ttft_other, 0.25);
  EXPECT_EQ(l.tpot_layer, 0.03125);
  EXPECT_EQ(l.tpot_other, 0.125);

  LlmArchitecture arch = load_llm_architecture(kModels + "llama-2-7b/config.json");
  ASSERT_EQ(arch.layers, 32);
  const ConfigMap map = estimate_config_map(arch, p, 1);
  ASSERT_EQ(map.entries.size(), 1u);  // tp1-pp1-fp16-kv16
  EXPECT_EQ(map.entries[0].memory_bytes, 36864.0);
  EXPECT_EQ(map.entries[0].ttft_s, 2.25);   // 0.25 + 32 · 0.0625
  EXPECT_EQ(map.entries[0].tpot_s, 1.125);  // 0.125 + 32 · 0.03125

  // Read at the paper's depths {1, 2}, the records of depths 4 and 8 are missing.
  EXPECT_THROW(solve_latency(p.compressions[0], 1), std::invalid_argument);

  // The depths round-trip; a record at another depth, and depths not increasing, are
  // refused naming the field.
  const std::string json = fingerprint_profile_to_json(p);
  const FingerprintProfile back = parse_fingerprint_profile(SpecNode::load_string(json, "p.json"));
  EXPECT_EQ(back.depths, (std::pair<int64_t, int64_t>{4, 8}));
  EXPECT_EQ(back.compressions[0].memory[1].fingerprint_layers, 8);
  for (const auto& [from, to, field] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"fingerprint_layers\": 8", "\"fingerprint_layers\": 2", "fingerprint_layers"},
           {"\"fingerprint_depths\": [\n    4,", "\"fingerprint_depths\": [\n    9,",
            "fingerprint_depths"},
           {"\"fingerprint_depths\": [", "\"fingerprint_depths\": [1, ", "fingerprint_depths"}}) {
    std::string bad = json;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    try {
      parse_fingerprint_profile(SpecNode::load_string(bad, "p.json"));
      ADD_FAILURE() << "accepted " << to;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera
